"""A Trino client for the real-Trino test, run in the client pod with the host's
python3: Trino's client protocol (POST /v1/statement, then GET nextUri until there is
none) through the coordinator Service's name, as a user's client reaches it.

Usage:
  trino_client.py query USER SQL
      prints {"id": ..., "rows": [...]}; a failed query exits 1 with Trino's message.
  trino_client.py probe NODES SQL MAX_SECONDS
      while a change rolls out: every half second asks the number of nodes (cluster
      availability) and runs SQL (the change's effect), until SQL succeeds and NODES
      nodes answer three times in a row, or MAX_SECONDS pass; prints when SQL first
      answered, and how many node queries failed, from when to when.
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


def attempt(sql):
    try:
        return True, query("test", sql)[1]
    except SystemExit as failure:
        return False, str(failure)[:120]
    except Exception as failure:  # connection refused, reset, timeout: the outage
        return False, type(failure).__name__


def probe(nodes, sql, max_seconds):
    start = time.time()
    first_effect = None
    failures = []
    errors = set()
    in_a_row = 0
    while time.time() - start < max_seconds and in_a_row < 3:
        now = time.time() - start
        nodes_ok, answer = attempt("SELECT count(*) FROM system.runtime.nodes WHERE state = 'active'")
        if not nodes_ok:
            failures.append(round(now, 1))
            errors.add(answer)
        effect_ok, _ = attempt(sql)
        if effect_ok and first_effect is None:
            first_effect = round(time.time() - start, 1)
        settled = nodes_ok and answer == [[nodes]] and effect_ok
        in_a_row = in_a_row + 1 if settled else 0
        time.sleep(0.5)
    print(json.dumps({
        "first_effect_s": first_effect,
        "failed_node_queries": len(failures),
        "failures_from_s": failures[0] if failures else None,
        "failures_until_s": failures[-1] if failures else None,
        "errors": sorted(errors),
        "settled": in_a_row >= 3,
        "seconds": round(time.time() - start, 1),
    }))


def main():
    command = sys.argv[1]
    if command == "query":
        query_id, rows = query(sys.argv[2], sys.argv[3])
        print(json.dumps({"id": query_id, "rows": rows}))
    elif command == "probe":
        probe(int(sys.argv[2]), sys.argv[3], float(sys.argv[4]))
    elif command == "drain-watch":
        drain_watch(sys.argv[2], sys.argv[3])
    else:
        sys.exit("unknown command " + command)


main()
