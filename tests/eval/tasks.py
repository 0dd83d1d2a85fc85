"""The evaluation's tasks: each a small generated repository, a prompt, and a judge.

A judge reads the repository after the agent's run (and its final answer) and says whether the
task is done, by the task's own tests or a check the agent never sees.  Repositories are plain
Python with `unittest`, so they need nothing installed.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Verdict:
    passed: bool
    detail: str


@dataclass(frozen=True, slots=True)
class Task:
    name: str
    prompt: str
    files: dict[str, str]
    judge: Callable[[Path, str], Verdict]

    def make_repo(self, root: Path) -> Path:
        """The task's repository under `root`, committed to git (so `git diff` shows the agent's work)."""
        repo = root / self.name
        for rel, content in self.files.items():
            path = repo / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
        for command in (["git", "init", "-q"], ["git", "add", "-A"],
                        ["git", "-c", "user.name=eval", "-c", "user.email=eval@example.invalid",
                         "commit", "-q", "-m", "start"]):
            subprocess.run(command, cwd=repo, check=True, capture_output=True)
        return repo


def _run(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=repo, capture_output=True, text=True, timeout=120)


def _unittest(repo: Path) -> Verdict:
    done = _run(repo, "-m", "unittest", "-q")
    last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
    return Verdict(done.returncode == 0, f"unittest: {last}")


def _digest(repo: Path, *names: str) -> str:
    return hashlib.sha256(b"".join((repo / n).read_bytes() for n in names)).hexdigest()


# ---------------------------------------------------------------- fix a failing test

_INVENTORY = '''\
"""Stock levels of a small shop."""


def restock(levels, item, count):
    """Add `count` units of `item`; a new item starts from zero."""
    levels[item] = levels.get(item, 0) + count
    return levels


def sell(levels, item, count):
    """Take `count` units of `item` away; refuse to sell more than there is."""
    if levels.get(item, 0) < count:
        raise ValueError(f"only {levels.get(item, 0)} {item} left")
    levels[item] = levels[item] + count
    return levels
'''

_INVENTORY_TEST = '''\
import unittest

from inventory import restock, sell


class InventoryTest(unittest.TestCase):
    def test_restock_adds(self):
        self.assertEqual(restock({"pen": 2}, "pen", 3), {"pen": 5})

    def test_sell_takes_away(self):
        self.assertEqual(sell({"pen": 5}, "pen", 2), {"pen": 3})

    def test_sell_refuses_more_than_there_is(self):
        with self.assertRaises(ValueError):
            sell({"pen": 1}, "pen", 2)
'''


def _judge_failing_test(repo: Path, answer: str) -> Verdict:
    if _digest(repo, "test_inventory.py") != _digest_of(_INVENTORY_TEST):
        return Verdict(False, "the test file was changed")
    return _unittest(repo)


def _digest_of(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------- add a CLI flag

_GREET = '''\
"""greet: print a greeting."""

import argparse


def greeting(name):
    return f"Hello, {name}!"


def main(argv=None):
    parser = argparse.ArgumentParser(description="Print a greeting.")
    parser.add_argument("name")
    args = parser.parse_args(argv)
    print(greeting(args.name))


if __name__ == "__main__":
    main()
'''

_GREET_TEST = '''\
import unittest

from greet import greeting


class GreetTest(unittest.TestCase):
    def test_greeting(self):
        self.assertEqual(greeting("Ada"), "Hello, Ada!")
'''


def _judge_cli_flag(repo: Path, answer: str) -> Verdict:
    plain, loud, short = (_run(repo, "greet.py", "Ada", *extra) for extra in ((), ("--shout",), ("-s",)))
    if plain.stdout.strip() != "Hello, Ada!":
        return Verdict(False, f"without the flag: {plain.stdout.strip() or plain.stderr.strip()[-80:]!r}")
    if loud.stdout.strip() != "HELLO, ADA!":
        return Verdict(False, f"--shout: {loud.stdout.strip() or loud.stderr.strip()[-80:]!r}")
    if short.stdout.strip() != "HELLO, ADA!":
        return Verdict(False, f"-s: {short.stdout.strip() or short.stderr.strip()[-80:]!r}")
    return _unittest(repo)


# ---------------------------------------------------------------- rename across files

_PRICES = '''\
def compute_total(prices):
    """The sum of `prices`, rounded to cents."""
    return round(sum(prices), 2)
'''
_ORDERS = '''\
from prices import compute_total


def order_total(lines):
    return compute_total([line["price"] * line["quantity"] for line in lines])
'''
_REPORT = '''\
import prices


def daily_report(orders):
    totals = [prices.compute_total(order) for order in orders]
    return f"{len(totals)} orders, {prices.compute_total(totals)} in all"
'''
_PRICES_TEST = '''\
import unittest

from orders import order_total
from report import daily_report


class PricesTest(unittest.TestCase):
    def test_order_total(self):
        self.assertEqual(order_total([{"price": 1.1, "quantity": 3}]), 3.3)

    def test_daily_report(self):
        self.assertEqual(daily_report([[1.0, 2.0], [0.5]]), "2 orders, 3.5 in all")
'''


def _judge_rename(repo: Path, answer: str) -> Verdict:
    left = [p.name for p in repo.glob("*.py") if "compute_total" in p.read_text()]
    if left:
        return Verdict(False, f"compute_total still in {', '.join(sorted(left))}")
    check = _run(repo, "-c", "from prices import sum_prices; assert sum_prices([0.1, 0.2]) == 0.3")
    if check.returncode != 0:
        return Verdict(False, "prices.sum_prices is missing or wrong")
    return _unittest(repo)


# ---------------------------------------------------------------- find and explain a bug

_STATS = '''\
"""Small statistics helpers."""


def mean(values):
    return sum(values) / len(values)


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle] + ordered[middle + 1]) / 2
'''
_BUG_LINE = 13


def _judge_explain(repo: Path, answer: str) -> Verdict:
    if subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout.strip():
        return Verdict(False, "files were changed (the task was to explain, not to fix)")
    text = answer.lower()
    names_line = f"stats.py:{_BUG_LINE}" in text or f"line {_BUG_LINE}" in text
    names_fix = "middle - 1" in text or "even" in text
    if names_line and names_fix:
        return Verdict(True, f"names stats.py:{_BUG_LINE} and the even-length case")
    return Verdict(False, f"the answer does not name line {_BUG_LINE} and the even-length case")


TASKS: tuple[Task, ...] = (
    Task("fix-failing-test",
         "A test in this repository fails. Find out why and fix the code (not the test). Run the tests with "
         "`python -m unittest`.",
         {"inventory.py": _INVENTORY, "test_inventory.py": _INVENTORY_TEST},
         _judge_failing_test),
    Task("add-cli-flag",
         "Add a --shout flag (short form -s) to greet.py that prints the greeting in upper case. Without the "
         "flag the output stays as it is.",
         {"greet.py": _GREET, "test_greet.py": _GREET_TEST},
         _judge_cli_flag),
    Task("rename-function",
         "Rename the function compute_total to sum_prices everywhere in this repository (definition and every "
         "use), and make sure the tests still pass.",
         {"prices.py": _PRICES, "orders.py": _ORDERS, "report.py": _REPORT, "test_prices.py": _PRICES_TEST},
         _judge_rename),
    Task("explain-bug",
         "stats.py's median gives wrong answers for some inputs. Find the bug and explain it, naming the file "
         "and line as path:line. Do not change any file.",
         {"stats.py": _STATS},
         _judge_explain),
)
