#!/usr/bin/python3
"""The chart's pre-delete step: stop the agent, then wait until every node has reverted.

Run by the pre-delete hook Job (docs/fleet.md). Standard library only; talks to the API server
with the Job's service account, whose Role allows exactly: delete the agent DaemonSet, get the
two DaemonSets. Steps:
1. delete the agent DaemonSet and wait until it is gone (its pods got SIGTERM, which never
   reverts; the agent no longer repairs "drift" while the node is being reverted);
2. wait until the uninstall DaemonSet is ready on every node it is scheduled on: its init
   container ran `ctk agent --uninstall` successfully there.
Exit 0 when both happened within the deadline, 1 otherwise (helm uninstall then fails and keeps
the hook objects, so a node that comes back later still reverts).
"""

from __future__ import annotations

import argparse
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class Api:
    def __init__(self, base: str, token: str | None, ca: str | None) -> None:
        self.base = base.rstrip("/")
        self.token = token
        self.context = ssl.create_default_context(cafile=ca) if base.startswith("https") else None

    def call(
        self, method: str, path: str, body: dict[str, object] | None = None
    ) -> tuple[int, dict[str, object]]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=30, context=self.context) as response:
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            return error.code, {}


def ready(ds: dict[str, object]) -> tuple[bool, str]:
    meta = ds.get("metadata", {})
    status = ds.get("status", {})
    assert isinstance(meta, dict) and isinstance(status, dict)
    desired = status.get("desiredNumberScheduled", -1)
    done = status.get("numberReady", 0)
    observed = status.get("observedGeneration", 0) >= meta.get("generation", 1)
    return observed and desired >= 0 and done == desired, f"{done}/{desired} nodes reverted"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--agent", required=True, help="the agent DaemonSet")
    parser.add_argument("--uninstall", required=True, help="the uninstall DaemonSet")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--poll", type=float, default=5)
    parser.add_argument("--api", help="API server URL (default: in-cluster)")
    args = parser.parse_args()
    if args.api:
        api = Api(args.api, os.environ.get("CTK_API_TOKEN"), None)
    else:
        host = os.environ["KUBERNETES_SERVICE_HOST"]
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        with open(f"{SA_DIR}/token") as token:
            api = Api(f"https://{host}:{port}", token.read().strip(), f"{SA_DIR}/ca.crt")
    ds_path = f"/apis/apps/v1/namespaces/{args.namespace}/daemonsets"
    deadline = time.monotonic() + args.timeout

    code, _ = api.call(
        "DELETE",
        f"{ds_path}/{args.agent}",
        {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"},
    )
    if code not in (200, 202, 404):
        print(f"deleting DaemonSet {args.agent}: HTTP {code}", file=sys.stderr)
        return 1
    print(f"stopping the agent (DaemonSet {args.agent})", flush=True)
    while api.call("GET", f"{ds_path}/{args.agent}")[0] != 404:
        if time.monotonic() > deadline:
            print(f"timed out: DaemonSet {args.agent} is still there", file=sys.stderr)
            return 1
        time.sleep(args.poll)

    state = "uninstall DaemonSet not found"
    while time.monotonic() <= deadline:
        code, ds = api.call("GET", f"{ds_path}/{args.uninstall}")
        if code == 200:
            done, state = ready(ds)
            print(state, flush=True)
            if done:
                return 0
        time.sleep(args.poll)
    print(
        f"timed out after {args.timeout:.0f}s: {state}; a node that is down reverts when it "
        "comes back (the uninstall DaemonSet stays until then), see docs/fleet.md",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
