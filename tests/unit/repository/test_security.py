# -*- coding: utf-8 -*-
"""What the collection executes is never a shell line built from input, and what peers send is only data."""
from __future__ import annotations

import ast
import json
import os
import socket
import subprocess
import threading
import time

from ansible_collections.aifabric.lab.plugins.module_utils._flow.engine import FlowSpec
from ansible_collections.aifabric.lab.plugins.module_utils._flow.tcp import TcpEngine
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.store import RunDirectory

PLUGINS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "plugins")
# The one place that builds a command line: the connection plugin's `ip netns exec NAME sh -c CMD`, every part
# shlex-quoted (tests/unit/plugins/connection/test_netns.py checks the quoting).
REVIEWED = {os.path.join("connection", "netns.py")}
# The one engine whose job is to run a tool: perftest, from an argument list built by _flow/perftest_cli.build_argv.
RUNS_TOOLS = {os.path.join("module_utils", "_flow", "perftest.py")}
FORBIDDEN_CALLS = {("os", "system"), ("os", "popen"), ("subprocess", "Popen"), ("subprocess", "run"),
                   ("subprocess", "call"), ("subprocess", "check_call"), ("subprocess", "check_output"),
                   ("module", "run_command")}


def _python_files():
    for root, _dirs, names in os.walk(PLUGINS):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(root, name)
                yield os.path.relpath(path, PLUGINS), path


def _fixed_argv(command, call):
    """``run_command([...])`` whose elements are literals or a program path variable, without use_unsafe_shell."""
    if not isinstance(command, ast.List) or not command.elts:
        return False
    if any(kw.arg == "use_unsafe_shell" for kw in call.keywords):
        return False
    return all(isinstance(e, ast.Constant) for e in command.elts[1:]) and isinstance(
        command.elts[0], (ast.Constant, ast.Name))


def test_no_plugin_runs_a_shell_or_a_command():
    offenders = []
    for rel, path in _python_files():
        if rel in REVIEWED:
            continue
        tree = ast.parse(open(path).read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = node.func.value.id if isinstance(node.func.value, ast.Name) else None
                if (owner, node.func.attr) in FORBIDDEN_CALLS:
                    command = node.args[0] if node.args else None
                    if rel in RUNS_TOOLS and owner == "subprocess" and isinstance(command, ast.Name):
                        pass  # an argument list, validated where it was built
                    elif owner == "module" and _fixed_argv(command, node):
                        pass  # a fixed argument list (modprobe vfio-pci, udevadm control --reload), no shell
                    else:
                        offenders.append("%s:%d %s.%s" % (rel, node.lineno, owner, node.func.attr))
                for kw in node.keywords:
                    if kw.arg == "shell" and isinstance(kw.value, ast.Constant) and kw.value.value:
                        offenders.append("%s:%d shell=True" % (rel, node.lineno))
            if isinstance(node, (ast.Import, ast.ImportFrom)) and rel not in RUNS_TOOLS:
                names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) else [])
                if "subprocess" in names:
                    offenders.append("%s:%d imports subprocess" % (rel, node.lineno))
    assert offenders == []


def test_hostile_flow_ids_and_tokens_stay_data(tmp_path):
    """A flow id full of shell syntax and a path climbing out is carried over the wire and stored literally, and the
    run directory names its file inside itself (a name that escaped would overwrite /etc/passwd's neighbours)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    marker = tmp_path / "pwned"
    hostile = "$(touch %s); `touch %s`; ../../etc/passwd" % (marker, marker)
    token = "'; rm -rf / #"
    # the control: through a shell, this id does run a command (so its absence below means something)
    subprocess.run(["sh", "-c", "echo %s > /dev/null" % hostile], check=False)
    assert marker.exists()
    marker.unlink()
    out = {}
    server = threading.Thread(target=lambda: out.update(TcpEngine().serve(
        FlowSpec(role="server", address="127.0.0.1", port=port, token=token, timeout=10))), daemon=True)
    server.start()
    result = TcpEngine().send(FlowSpec(role="client", address="127.0.0.1", port=port, token=token, volume=1000,
                                       flow_id=hostile, start_at=time.time() + 0.3, timeout=5))
    server.join(5)
    assert result["status"] == "ok"
    assert out["flows"][0]["flow_id"] == hostile
    run = RunDirectory(str(tmp_path / "runs"), "security")
    run.add_flow("../../step", dict(result, host="../w1", flow_id=hostile))
    written = [os.path.join(d, f) for d, _dirs, files in os.walk(str(tmp_path)) for f in files]
    (path,) = [p for p in written if p.endswith(".json")]
    assert os.path.realpath(path).startswith(os.path.realpath(run.path) + os.sep), path
    assert json.load(open(path))["flow_id"] == hostile
    assert not marker.exists()


def test_a_server_binds_only_where_it_is_told():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    listener = TcpEngine.listen(FlowSpec(role="server", address="127.0.0.1", port=port, token="t"))
    try:
        assert listener.getsockname() == ("127.0.0.1", port)
    finally:
        listener.close()
