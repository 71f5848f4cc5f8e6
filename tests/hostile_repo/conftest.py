"""The hostile-repository suite's fixture: `lab`, one probe's world (harness.Lab)."""

from tests.hostile_repo.harness import lab  # noqa: F401 - the fixture
