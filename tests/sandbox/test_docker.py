"""The docker backend's gVisor-or-nothing rule, on what containers really report.

The texts below were captured here: from a gVisor sandbox (runsc) and from the
host kernel, which is what a runc (or crun) container sees. The full docker
backend suite runs against Podman + runsc once the CI machine provides it.
"""

from __future__ import annotations

import pytest

from sandbox.docker import KernelReport, RuncWarning, require_gvisor
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
    require_gvisor(report, "unix:///run/fixloop/podman.sock")


def test_a_runc_container_is_refused_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FIXLOOP_ALLOW_RUNC", raising=False)
    report = KernelReport.parse(RUNC)
    assert not report.gvisor
    with pytest.raises(SandboxUnavailable, match="does not run containers under gVisor"):
        require_gvisor(report, "unix:///run/fixloop/podman.sock")


def test_allowing_runc_warns_on_every_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIXLOOP_ALLOW_RUNC", "1")
    report = KernelReport.parse(RUNC)
    for _ in range(2):
        with pytest.warns(RuncWarning):
            require_gvisor(report, "unix:///run/fixloop/podman.sock")


def test_a_container_that_reports_nothing_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FIXLOOP_ALLOW_RUNC", raising=False)
    with pytest.raises(SandboxUnavailable):
        require_gvisor(KernelReport.parse("no banner at all\n"), "tcp://engine:2375")
