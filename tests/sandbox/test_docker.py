"""The docker backend's gVisor-or-nothing rule, on what containers really report.

The texts below were captured here: from a gVisor sandbox (runsc) and from the
host kernel, which is what a runc (or crun) container sees. The real engines
(Podman with runsc, and with runc) are in test_docker_engine.py and the hostile suite.
"""

from __future__ import annotations

import pytest

from sandbox.docker.kernel import KernelReport, require_gvisor
from sandbox.errors import SandboxUnavailable

GVISOR = (
    "FIXLOOP-KERNEL Linux version 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016\n"
    "FIXLOOP-ROOT 9p ro,trans=fd,rfdno=3,wfdno=3,aname=/,cache=fscache\n"
)
RUNC = (
    "FIXLOOP-KERNEL Linux version 6.18.44-fc-v1045 (builder@sandboxing) (gcc (GCC) 15.3.0) "
    "#1 SMP PREEMPT_DYNAMIC @0\n"
    "FIXLOOP-ROOT overlay rw,relatime,lowerdir=/var/lib/containers/storage/overlay/l/ABC,"
    "upperdir=/var/lib/containers/storage/overlay/x/diff\n"
)


def test_a_gvisor_container_is_recognised() -> None:
    report = KernelReport.parse(GVISOR)
    assert report.gvisor
    assert require_gvisor(report, "unix:///run/fixloop/podman.sock", allow_runc=False)


def test_a_runc_container_is_refused_with_the_fix() -> None:
    report = KernelReport.parse(RUNC)
    assert not report.gvisor
    with pytest.raises(SandboxUnavailable, match="does not run containers under gVisor"):
        require_gvisor(report, "unix:///run/fixloop/podman.sock", allow_runc=False)


def test_allowing_runc_accepts_a_runc_container_as_not_gvisor() -> None:
    report = KernelReport.parse(RUNC)
    assert not require_gvisor(report, "unix:///run/fixloop/podman.sock", allow_runc=True)


def test_runc_is_allowed_by_the_environment_when_not_said_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    report = KernelReport.parse(RUNC)
    monkeypatch.setenv("FIXLOOP_ALLOW_RUNC", "1")
    assert not require_gvisor(report, "unix:///run/fixloop/podman.sock")
    monkeypatch.delenv("FIXLOOP_ALLOW_RUNC")
    with pytest.raises(SandboxUnavailable):
        require_gvisor(report, "unix:///run/fixloop/podman.sock")


def test_a_container_that_reports_nothing_is_refused() -> None:
    with pytest.raises(SandboxUnavailable):
        require_gvisor(
            KernelReport.parse("no banner at all\n"), "tcp://engine:2375", allow_runc=False
        )
