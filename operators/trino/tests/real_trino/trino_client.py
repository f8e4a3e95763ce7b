"""A Trino client for the real-Trino test, run in the client pod with the host's
python3: Trino's client protocol (POST /v1/statement, then GET nextUri until there is
none) through the coordinator Service's name, as a user's client reaches it.

It connects as the cluster's discovery ConfigMap says, which the client pod reads into
its environment: TRINO is the coordinator's URL, and with TLS the CA in TRINO_CA checks
the coordinator's certificate for that name. TRINO_PASSWORDS (JSON, user to password)
gives the users who log in with a password; the others only name themselves.

Usage:
  trino_client.py query USER SQL
      prints {"id": ..., "rows": [...]}; a failed query exits 1 with Trino's message.
  trino_client.py login USER PASSWORD
      POSTs a query with these credentials; prints {"status": ...}.
  trino_client.py plain HOST
      asks HOST's /v1/info over plain HTTP, on port 8080 and on the HTTPS port; prints
      what each attempt got: {"8080": ..., "https-port": ...}.
  trino_client.py oauth2 ISSUER CLIENT_ID
      gets an access token from the OpenID Connect provider ISSUER (client-credentials
      grant, its CA in /strata/oidc-ca/ca.crt), runs `SELECT current_user` with it as
      a Bearer token, and again with its signature tampered with; prints
      {"valid": {"status": ..., "rows": ...}, "tampered": {"status": ...}}.
  trino_client.py shutdown HOST USER [PASSWORD]
      PUT /v1/info/state "SHUTTING_DOWN" to the node HOST (its FQDN) as USER; prints
      {"status": ..., "body": ...}.
  trino_client.py metrics HOST SERVER_NAME USER PASSWORD
      scrapes HOST's /metrics as Prometheus does with the operator's ServiceMonitor:
      connects to HOST (a pod's FQDN) and checks its certificate for SERVER_NAME,
      sending USER and PASSWORD (which may be empty) as basic credentials; prints
      {"status": ..., "names": [...], "values": {...}}: the names of the metrics
      served, and the value of each served without labels.
  trino_client.py probe NODES SQL MAX_SECONDS
      while a change rolls out: every half second asks the number of nodes (cluster
      availability) and runs SQL (the change's effect), until SQL succeeds and NODES
      nodes answer three times in a row, or MAX_SECONDS pass; prints when SQL first
      answered, and how many node queries failed, from when to when.
  trino_client.py forwarded PUBLIC_HOST
      POSTs `SELECT 1` with the X-Forwarded-Proto, -Host and -Port headers a Gateway
      or an Ingress controller adds for a client that reached PUBLIC_HOST over
      HTTPS; prints {"status": ..., "nextUri": ...}: the URI Trino hands back for the
      client's next request.
  trino_client.py drain-watch WORKER SQL
      waits until WORKER is `shutting_down` in system.runtime.nodes, then runs SQL and
      prints {"states": [...], "id": ..., "rows": [...], "task_nodes": [...]}: every
      state seen, and the nodes that ran the tasks of that query.
"""
import base64
import json
import os
import socket
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

SERVER = os.environ["TRINO"]
PASSWORDS = json.loads(os.environ.get("TRINO_PASSWORDS") or "{}")
CONTEXT = ssl.create_default_context(cafile=os.environ["TRINO_CA"]) if SERVER.startswith("https") else None


def headers(user, password=None):
    password = PASSWORDS.get(user) if password is None else password
    fields = {"X-Trino-User": user}
    if password:
        token = base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        fields["Authorization"] = "Basic " + token
    return fields


def open_url(request, timeout=60):
    return urllib.request.urlopen(request, timeout=timeout, context=CONTEXT)


def query(user, sql):
    request = urllib.request.Request(
        SERVER + "/v1/statement",
        data=sql.encode(),
        headers=headers(user),
        method="POST",
    )
    rows = []
    while True:
        with open_url(request) as response:
            answer = json.load(response)
        rows.extend(answer.get("data", []))
        if "error" in answer:
            sys.exit("query failed: " + answer["error"]["message"])
        next_uri = answer.get("nextUri")
        if not next_uri:
            return answer["id"], rows
        time.sleep(0.05)
        request = urllib.request.Request(next_uri, headers=headers(user))


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


def status_of(request):
    try:
        with open_url(request, timeout=30) as response:
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


def login(user, password):
    request = urllib.request.Request(
        SERVER + "/v1/statement", data=b"SELECT 1", headers=headers(user, password), method="POST"
    )
    print(json.dumps({"status": status_of(request)[0]}))


def plain(host):
    port = SERVER.rsplit(":", 1)[1]
    seen = {}
    for name, port in (("8080", "8080"), ("https-port", port)):
        try:
            with urllib.request.urlopen("http://%s:%s/v1/info" % (host, port), timeout=10) as response:
                seen[name] = "HTTP %d" % response.status
        except urllib.error.URLError as failure:  # refused: the reason is the error
            reason = failure.reason
            seen[name] = type(reason).__name__ if isinstance(reason, Exception) else str(reason)
        except Exception as failure:  # reset, or an answer that is not HTTP
            seen[name] = type(failure).__name__
    print(json.dumps(seen))


def shutdown(host, user, password=None):
    scheme, rest = SERVER.split("://", 1)
    port = rest.rsplit(":", 1)[1]
    request = urllib.request.Request(
        "%s://%s:%s/v1/info/state" % (scheme, host, port),
        data=b'"SHUTTING_DOWN"',
        headers=dict(headers(user, password or ""), **{"Content-Type": "application/json"}),
        method="PUT",
    )
    status, body = status_of(request)
    print(json.dumps({"status": status, "body": body[:300]}))


def metrics(host, server_name, user, password):
    scheme, rest = SERVER.split("://", 1)
    port = int(rest.rsplit(":", 1)[1])
    connection = socket.create_connection((host, port), timeout=30)
    if scheme == "https":
        connection = CONTEXT.wrap_socket(connection, server_hostname=server_name)
    token = base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
    # HTTP/1.0: the answer ends with the connection, never chunked.
    connection.sendall(
        ("GET /metrics HTTP/1.0\r\nHost: %s\r\nAuthorization: Basic %s\r\n\r\n" % (host, token)).encode()
    )
    answer = b""
    while True:
        chunk = connection.recv(65536)
        if not chunk:
            break
        answer += chunk
    connection.close()
    head, _, body = answer.decode(errors="replace").partition("\r\n\r\n")
    status = int(head.split(" ", 2)[1])
    names = set()
    values = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            name = line.split("{", 1)[0].split(" ", 1)[0]
            names.add(name)
            if "{" not in line:
                values[name] = line.split(" ")[1]
    print(json.dumps({"status": status, "names": sorted(names), "values": values, "body": body[:300] if status != 200 else ""}))


def bearer_query(token, sql):
    request = urllib.request.Request(
        SERVER + "/v1/statement", data=sql.encode(),
        headers={"Authorization": "Bearer " + token}, method="POST",
    )
    rows = []
    try:
        while True:
            with open_url(request) as response:
                answer = json.load(response)
            rows.extend(answer.get("data", []))
            next_uri = answer.get("nextUri")
            if not next_uri:
                return {"status": 200, "rows": rows}
            time.sleep(0.05)
            request = urllib.request.Request(next_uri, headers={"Authorization": "Bearer " + token})
    except urllib.error.HTTPError as error:
        return {"status": error.code}


def forwarded(public_host):
    fields = dict(headers("test"), **{
        "X-Forwarded-Proto": "https", "X-Forwarded-Host": public_host, "X-Forwarded-Port": "443",
    })
    request = urllib.request.Request(SERVER + "/v1/statement", data=b"SELECT 1", headers=fields, method="POST")
    status, body = status_of(request)
    try:
        next_uri = json.loads(body).get("nextUri")
    except ValueError:
        next_uri = None
    print(json.dumps({"status": status, "nextUri": next_uri, "body": body[:300] if status != 200 else ""}))


def oauth2(issuer, client_id, scope):
    """A client-credentials token of `client_id`; the provider makes `scope` its audience
    (`default` without one)."""
    context = ssl.create_default_context(cafile="/strata/oidc-ca/ca.crt")
    fields = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": "unused"}
    if scope:
        fields["scope"] = scope
    form = urllib.parse.urlencode(fields).encode()
    with urllib.request.urlopen(
        urllib.request.Request(issuer + "/token", data=form, method="POST"), timeout=30, context=context
    ) as response:
        token = json.load(response)["access_token"]
    tail = "AAAA" if not token.endswith("AAAA") else "BBBB"
    print(json.dumps({
        "valid": bearer_query(token, "SELECT current_user"),
        "tampered": bearer_query(token[:-4] + tail, "SELECT current_user"),
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
    elif command == "login":
        login(sys.argv[2], sys.argv[3])
    elif command == "oauth2":
        oauth2(sys.argv[2], sys.argv[3], sys.argv[4])
    elif command == "forwarded":
        forwarded(sys.argv[2])
    elif command == "plain":
        plain(sys.argv[2])
    elif command == "metrics":
        metrics(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    elif command == "shutdown":
        shutdown(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
    else:
        sys.exit("unknown command " + command)


main()
