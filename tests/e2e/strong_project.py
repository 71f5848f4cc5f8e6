"""A project shaped like the real bench's tasks, for replaying strong models' answers: a src
layout of several modules (one of them 3,000+ lines, one indented with tabs, one with Windows
line endings), its tests beside it, installed editable into its own `.venv` with pytest. Green
as built; each task copies it (the venv's pointers moved to the copy, as the bench does),
writes one bug in, and commits that as the copy's one commit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.real_projects import IGNORED, PYTEST
from bench.suite.project_tasks import VENVS, copy_project
from engine.project.git_plumbing import git_bytes

_AUTHOR = ("-c", "user.name=fixloop test", "-c", "user.email=test@fixloop.invalid")

PYPROJECT = """\
[build-system]
requires = ["setuptools>=80"]
build-backend = "setuptools.build_meta"

[project]
name = "ledgerkit"
version = "0.1.0"
requires-python = ">=3.10"

[tool.setuptools.packages.find]
where = ["src"]

[tool.pytest.ini_options]
testpaths = ["tests"]
"""

INIT = '''\
"""Ledgerkit: amounts of money, ledgers of them, and the records they are imported from."""

from ledgerkit.ledger import Entry, Ledger
from ledgerkit.money import Money, parse_amount

__all__ = ["Entry", "Ledger", "Money", "parse_amount"]
'''

MONEY = '''\
"""Amounts of money as integer cents, parsed from and formatted to text."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Money:
    cents: int
    currency: str = "EUR"

    def __add__(self, other: Money) -> Money:
        if other.currency != self.currency:
            raise ValueError(f"cannot add {other.currency} to {self.currency}")
        return Money(self.cents + other.cents, self.currency)

    def format(self) -> str:
        sign = "-" if self.cents < 0 else ""
        whole, cents = divmod(abs(self.cents), 100)
        return f"{sign}{whole}.{cents:02d} {self.currency}"


def parse_amount(text: str, currency: str = "EUR") -> Money:
    """'12.5' is 1250 cents, '-3.07' is -307."""
    text = text.strip()
    negative = text.startswith("-")
    digits = text.lstrip("+-")
    whole, _, fraction = digits.partition(".")
    fraction = (fraction + "00")[:2]
    cents = int(whole or "0") * 100 + int(fraction)
    return Money(-cents if negative else cents, currency)
'''

LEDGER = '''\
"""A ledger: entries on accounts, and their balance."""

from __future__ import annotations

from dataclasses import dataclass, field

from ledgerkit.money import Money, parse_amount


@dataclass(frozen=True)
class Entry:
    account: str
    amount: Money
    memo: str = ""


@dataclass
class Ledger:
    currency: str = "EUR"
    entries: list[Entry] = field(default_factory=list)

    def record(self, account: str, amount: str, memo: str = "") -> Entry:
        entry = Entry(account, parse_amount(amount, self.currency), memo)
        self.entries.append(entry)
        return entry

    def balance(self, account: str | None = None) -> Money:
        total = Money(0, self.currency)
        for entry in self.entries:
            if account is None or entry.account == account:
                total = total + entry.amount
        return total

    def accounts(self) -> list[str]:
        return sorted({entry.account for entry in self.entries})
'''

# Written as it was in the first version of the project: indented with tabs.
LEGACY = (
    '"""Conversions kept from the first version of ledgerkit."""\n'
    "\n"
    "\n"
    "def split_account(name):\n"
    "\t\"\"\"'assets: bank :checking' is ['assets', 'bank', 'checking'].\"\"\"\n"
    "\tparts = []\n"
    '\tfor part in name.split(":"):\n'
    "\t\tif part.strip():\n"
    "\t\t\tparts.append(part.strip())\n"
    "\treturn parts\n"
    "\n"
    "\n"
    "def join_account(parts):\n"
    '\treturn ":".join(part.strip() for part in parts if part.strip())\n'
)

# Saved on Windows: every line ends in CRLF.
RATES = (
    '"""Exchange rates against the euro, and conversion between currencies."""\n'
    "\n"
    'RATES = {"EUR": 1.0, "USD": 1.1, "GBP": 0.85}\n'
    "\n"
    "\n"
    "def convert(cents, source, target):\n"
    '    """`cents` in `source` as cents of `target`, to the nearest cent."""\n'
    "    euros = cents / RATES[source]\n"
    "    return round(euros * RATES[target])\n"
).replace("\n", "\r\n")

TEST_MONEY = """\
from ledgerkit.money import Money, parse_amount


def test_parse_amount_pads_the_fraction():
    assert parse_amount("12.5") == Money(1250)


def test_parse_amount_keeps_the_sign():
    assert parse_amount("-3.07") == Money(-307)


def test_format_shows_two_decimals():
    assert Money(-1205, "USD").format() == "-12.05 USD"
"""

TEST_LEDGER = """\
from ledgerkit import Ledger, Money


def test_balance_adds_every_entry():
    ledger = Ledger()
    ledger.record("cash", "10")
    ledger.record("bank", "2.5")
    assert ledger.balance() == Money(1250)


def test_balance_of_one_account():
    ledger = Ledger()
    ledger.record("cash", "10")
    ledger.record("bank", "2.5")
    ledger.record("cash", "-1")
    assert ledger.balance("cash") == Money(900)
"""

TEST_LEGACY = """\
from ledgerkit.legacy import join_account, split_account


def test_split_account_strips_each_part():
    assert split_account("assets: bank :checking") == ["assets", "bank", "checking"]


def test_join_account():
    assert join_account(["a", " b "]) == "a:b"
"""

TEST_RATES = """\
from ledgerkit.rates import convert


def test_convert_rounds_to_the_nearest_cent():
    assert convert(1000, "EUR", "USD") == 1100
    assert convert(1000, "USD", "GBP") == 773
"""

TEST_RECORDS = """\
from ledgerkit.records import (
    InvoiceRecord,
    Row,
    settle_batch,
    sum_credits,
    sum_debits,
)

ROWS = [
    {"account": "Cash ", "amount": "10.00"},
    {"account": "cash", "amount": "2.50"},
    {"account": "bank", "amount": "-4"},
]


def test_settle_batch_adds_up_each_account():
    assert settle_batch(ROWS) == {"cash": 1250, "bank": -400}


def test_settle_batch_charges_the_fee_once_per_account():
    assert settle_batch(ROWS, fee_cents=50) == {"cash": 1200, "bank": -450}


def test_sum_debits():
    assert sum_debits([Row(500), Row(-200), Row(100)]) == 600


def test_sum_credits_is_positive():
    assert sum_credits([Row(500), Row(-200), Row(-100)]) == 300


def test_invoice_record_from_row():
    record = InvoiceRecord.from_row({"reference": " A-1 ", "account": "Cash", "amount": "1.5"})
    assert (record.reference, record.account, record.cents) == ("A-1", "cash", 150)
"""

RECORDS_HEAD = '''\
"""Records imported from the accounting system's exports: one class per kind of row, each
read from a row of text fields, and the batch arithmetic done over them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


def parse_cents(text: str) -> int:
    """'12.5' is 1250, '-4' is -400."""
    text = text.strip()
    negative = text.startswith("-")
    whole, _, fraction = text.lstrip("+-").partition(".")
    cents = int(whole or "0") * 100 + int((fraction + "00")[:2])
    return -cents if negative else cents


def normalise_account(name: str) -> str:
    return name.strip().lower()


@dataclass(frozen=True)
class Row:
    cents: int
'''

# The middle of the module: the batch arithmetic. Two lines carry trailing spaces, as files
# edited for years do; sum_debits and sum_credits share their last four lines.
RECORDS_MIDDLE = (
    "\n\n"
    "def settle_batch(rows: list[dict[str, str]], fee_cents: int = 0) -> dict[str, int]:\n"
    '    """Net cents per account of a batch of rows, each account charged `fee_cents` once."""\n'
    "    totals: dict[str, int] = {}   \n"
    "    for row in rows:  \n"
    '        account = normalise_account(row.get("account", ""))\n'
    '        totals[account] = totals.get(account, 0) + parse_cents(row.get("amount", "0"))\n'
    "    for account in totals:\n"
    "        totals[account] -= fee_cents\n"
    "    return totals\n"
    "\n\n"
    "def sum_debits(items: list[Row]) -> int:\n"
    '    """The debits of `items`, in cents (a positive number)."""\n'
    "    items = [item for item in items if item.cents > 0]\n"
    "    total = 0\n"
    "    for item in items:\n"
    "        total += item.cents\n"
    "    return total\n"
    "\n\n"
    "def sum_credits(items: list[Row]) -> int:\n"
    '    """The credits of `items`, in cents (a positive number)."""\n'
    "    items = [item for item in items if item.cents < 0]\n"
    "    total = 0\n"
    "    for item in items:\n"
    "        total -= item.cents\n"
    "    return total\n"
)

_KINDS = (
    "Invoice", "Receipt", "Refund", "Payout", "Transfer", "Fee", "Interest", "Dividend",
    "Payroll", "Expense",
)  # fmt: skip
_VARIANTS = (
    "", "Draft", "Batch", "Correction", "Archive", "Import", "Pending", "Reversal",
    "Scheduled", "Foreign",
)  # fmt: skip


def _record_kind(name: str) -> str:
    """One kind of record: its class, reader and total, as the export's rows hold them."""
    words = name.replace("Record", "")
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in words).lstrip("_")
    return f'''

@dataclass(frozen=True)
class {name}:
    """One {snake.replace("_", " ")} row as the accounting system exports it."""

    reference: str
    account: str
    cents: int
    memo: str = ""

    @classmethod
    def from_row(cls, row: dict[str, str]) -> {name}:
        reference = row.get("reference", "").strip()
        if not reference:
            raise ValueError("{snake} row without a reference")
        return cls(
            reference=reference,
            account=normalise_account(row.get("account", "")),
            cents=parse_cents(row.get("amount", "0")),
            memo=row.get("memo", "").strip()[:80],
        )

    def is_debit(self) -> bool:
        return self.cents > 0

    def describe(self) -> str:
        sign = "debit" if self.is_debit() else "credit"
        return f"{{self.reference}} ({snake}, {{sign}}): {{self.cents}} cents on {{self.account}}"


def {snake}_total(records: Iterable[{name}]) -> int:
    """The sum of the {snake.replace("_", " ")} records' amounts, in cents."""
    return sum(record.cents for record in records)
'''


def records_module() -> str:
    """records.py: a hundred record kinds around the batch arithmetic in the middle."""
    names = [f"{variant}{kind}Record" for variant in _VARIANTS for kind in _KINDS]
    half = len(names) // 2
    return (
        RECORDS_HEAD
        + "".join(_record_kind(name) for name in names[:half])
        + RECORDS_MIDDLE
        + "".join(_record_kind(name) for name in names[half:])
    )


FILES: dict[str, str] = {
    "pyproject.toml": PYPROJECT,
    ".gitignore": IGNORED,
    "src/ledgerkit/__init__.py": INIT,
    "src/ledgerkit/money.py": MONEY,
    "src/ledgerkit/ledger.py": LEDGER,
    "src/ledgerkit/legacy.py": LEGACY,
    "src/ledgerkit/rates.py": RATES,
    "tests/test_money.py": TEST_MONEY,
    "tests/test_ledger.py": TEST_LEDGER,
    "tests/test_legacy.py": TEST_LEGACY,
    "tests/test_rates.py": TEST_RATES,
    "tests/test_records.py": TEST_RECORDS,
}


def build_green(root: Path) -> Path:
    """The project at `root`, installed editable into `root/.venv` with pytest; green."""
    for path, text in {**FILES, "src/ledgerkit/records.py": records_module()}.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(text.encode())  # newlines as written: rates.py keeps CRLF
    readable(root)  # before the venv: its symlinks lead to the interpreter it was made from
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")], check=True)
    pip(root / ".venv", PYTEST, "setuptools>=80")
    pip(root / ".venv", "--no-build-isolation", "--no-deps", "-e", str(root))
    site = next((root / ".venv").glob("lib/python*/site-packages"))
    pth = "".join(path.read_text() for path in site.glob("*.pth"))
    assert str(root / "src") in pth, pth  # the editable install points at the checkout's src/
    return root


def pip(venv: Path, *args: str) -> None:
    """pip into the project's venv (made --without-pip: fast, no bundled wheels)."""
    python = str(venv / "bin" / "python")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "-q", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def task(green: Path, dest: Path, bugs: dict[str, tuple[str, str]]) -> Path:
    """A copy of the green project at `dest` with `bugs` written in (path: (right text, buggy
    text), each right text occurring once), committed as its one commit; venvs untracked."""
    copy_project(green, dest)
    for path, (right, wrong) in bugs.items():
        text = (dest / path).read_bytes().decode()
        assert text.count(right) == 1, f"{path}: {right!r} occurs {text.count(right)} times"
        (dest / path).write_bytes(text.replace(right, wrong).encode())
    git_bytes(dest, "init", "--quiet", "-b", "main")
    (dest / ".git" / "info").mkdir(parents=True, exist_ok=True)
    (dest / ".git" / "info" / "exclude").write_text("".join(f"/{v}/\n" for v in VENVS))
    git_bytes(dest, "add", "-A")
    git_bytes(dest, *_AUTHOR, "commit", "--quiet", "--no-verify", "-m", "the project")
    readable(dest)
    return dest


def readable(top: Path) -> None:
    """The sandbox runs as nobody: every directory searchable, every file readable. Never
    through a link (a venv's lead to the host's interpreter), never into `.git` or a venv."""
    for path in [top, *top.rglob("*")]:
        inside = path.relative_to(top).parts
        if path.is_symlink() or ".git" in inside or set(VENVS) & set(inside):
            continue
        path.chmod(0o755 if path.is_dir() else 0o644)
