"""A Trino client for the real-Trino test, run in the client pod with the host's
python3: Trino's client protocol (POST /v1/statement, then GET nextUri until there is
none) through the coordinator Service's name, as a user's client reaches it.

Usage:
  trino_client.py query USER SQL
      prints {"id": ..., "rows": [...]}; a failed query exits 1 with Trino's message.
  trino_client.py drain-watch WORKER SQL
      waits until WORKER is `shutting_down` in system.runtime.nodes, then runs SQL and
      prints {"states": [...], "id": ..., "rows": [...], "task_nodes": [...]}: every
      state seen, and the nodes that ran the tasks of that query.
"""
import json
import sys
import time
import urllib.request

SERVER = "http://simple-trino-coordinator.default.svc.cluster.local:8080"


def query(user, sql):
    request = urllib.request.Request(
        SERVER + "/v1/statement",
        data=sql.encode(),
        headers={"X-Trino-User": user},
        method="POST",
    )
    rows = []
    while True:
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.load(response)
        rows.extend(answer.get("data", []))
        if "error" in answer:
            sys.exit("query failed: " + answer["error"]["message"])
        next_uri = answer.get("nextUri")
        if not next_uri:
            return answer["id"], rows
        time.sleep(0.05)
        request = urllib.request.Request(next_uri, headers={"X-Trino-User": user})


def drain_watch(worker, sql):
    states = []
    deadline = time.time() + 60
    while time.time() < deadline:
        _, rows = query("test", "SELECT state FROM system.runtime.nodes WHERE node_id = '%s'" % worker)
        state = rows[0][0] if rows else "gone"
        if not states or states[-1] != state:
            states.append(state)
        if state == "shutting_down":
            break
        time.sleep(0.5)
    query_id, rows = query("test", sql)
    _, nodes = query(
        "test",
        "SELECT DISTINCT node_id FROM system.runtime.tasks WHERE query_id = '%s'" % query_id,
    )
    print(json.dumps({"states": states, "id": query_id, "rows": rows, "task_nodes": sorted(n[0] for n in nodes)}))


def main():
    command = sys.argv[1]
    if command == "query":
        query_id, rows = query(sys.argv[2], sys.argv[3])
        print(json.dumps({"id": query_id, "rows": rows}))
    elif command == "drain-watch":
        drain_watch(sys.argv[2], sys.argv[3])
    else:
        sys.exit("unknown command " + command)


main()
