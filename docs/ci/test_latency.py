# labgrid + pytest: start the responder on the target through labgrid's
# shell, measure from the probe on this host, and gate on latprobe's exit
# code; latprobe's own JUnit (one testcase per limit) sits beside pytest's.
#   pytest --lg-env bench.yaml docs/ci/test_latency.py --junitxml=pytest.xml
import subprocess

import pytest


@pytest.fixture
def responder(target):
    shell = target.get_driver("ShellDriver")
    target.activate(shell)
    shell.run_check(
        "nohup latprobe-responder uart --device /dev/ttyS1 --priority 80 "
        ">/tmp/responder.log 2>&1 & echo $! > /tmp/responder.pid"
    )
    yield shell
    shell.run("kill $(cat /tmp/responder.pid)")


def test_external_latency(responder, tmp_path):
    junit = tmp_path / "latency.xml"
    cmd = [
        "latprobe", "run", "--port", "/dev/ttyACM0", "--duration", "5min",
        "--limits", "docs/ci/limits.toml", "--junit", str(junit),
        "-o", str(tmp_path / "latency.json"), "--html", str(tmp_path / "latency.html"),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    # 3: a limit was violated; 1: the run failed; 2: a set-up error.
    assert done.returncode != 2, done.stderr
    assert done.returncode != 1, done.stderr
    assert done.returncode == 0, done.stdout + junit.read_text()
