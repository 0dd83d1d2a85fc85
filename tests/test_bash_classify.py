"""Which shell commands count as read-only, and how compound commands split."""

from __future__ import annotations

import pytest

from agent_tui.shell.classify import is_read_only_command, split_command

READ_ONLY = [
    "ls",
    "ls -la src",
    "ls && cat x",
    "cat x | grep y",
    "cat x | grep y | sort | uniq -c | head -5",
    "git status",
    "git log --oneline -5",
    "git diff HEAD -- src/app.py",
    "git --no-pager show HEAD:README.md",
    "git branch",
    "git branch -a -v",
    "git branch --list 'feat/*'",
    "git tag",
    "git tag -l 'v1.*'",
    "git remote -v",
    "git rev-parse --show-toplevel",
    "git ls-files",
    "git blame app.py",
    "find . -name '*.py' -type f",
    "rg -n TODO src",
    "wc -l *.py",
    "echo done; pwd",
    "test -f setup.py || echo missing",
    "[ -d build ] && ls build",
    "ls 2>/dev/null",
    "grep -r foo . > /dev/null 2>&1",
    "{ ls; pwd; }",
    "sort -u names.txt",
    "uniq names.txt",
    "date +%Y",
    "if [ -f x ]; then cat x; else echo none; fi",
    "diff a.txt b.txt",
    "cat <<EOF\nplain text\nEOF",
    "which python3 && uname -a",
]

NOT_READ_ONLY = [
    # what a word expands to, or where a cd leads, is only known when it runs
    "echo $(cat VERSION)",
    "cat `ls *.txt`",
    "cat $HOME/.ssh/id_rsa",
    "cat {..,.}/secret",
    "cat ~+/../secret",
    "cat .*/secret",
    "tr a a < $F",
    "(cd src && ls)",
    "cd; cat .ssh/id_rsa",
    # they print the environment, API keys included
    "env",
    "printenv PATH",
    "echo $ANTHROPIC_API_KEY",
    # git pointed at another repository or configuration (whose fsmonitor or pager git would run)
    "git -C repo show HEAD:README.md",
    "git --git-dir=x status",
    "git --work-tree=.. status",
    "git -c core.fsmonitor=x status",
    "git --config-env=core.pager=P log",
    "git --exec-path=/tmp status",
    # options that read any file or follow symlinks anywhere
    "git diff --no-index ../secret x",
    "git diff --no-ind ../secret x",
    "date --file=../secret",
    "date --fi=../secret",
    "sort --out=x y",
    "grep -R foo .",
    "rg --follow foo",
    "find -L . -name x",
    "rm -rf x",
    "ls; rm -rf x",
    "ls && rm x",
    "cat x | tee y",
    "echo $(rm x)",
    "echo `rm x`",
    'echo "$(rm x)"',
    "echo ${X:-$(rm x)}",
    "cat <(rm x)",
    "echo hi > f",
    "echo hi >> f",
    "ls 2> errors.log",
    "ls &> out.txt",
    "(ls) > f",
    "X=1 ls",
    "ls &",
    "find . -delete",
    "find . -name '*.tmp' -exec rm {} +",
    "find . -fprint out.txt",
    "find . *",
    "sort -o out.txt in.txt",
    "uniq in.txt out.txt",
    "git commit -m x",
    "git push",
    "git branch new-feature",
    "git branch -D old",
    "git tag v1.0",
    "git remote add origin url",
    "git -c core.pager=sh log",
    "git diff --output=patch.txt",
    "env rm x",
    "date 0101",
    "rg --pre ./script pattern",
    "tree -o listing.txt",
    "python -c 'print(1)'",
    "./ls",
    "/bin/rm x",
    "$CMD args",
    "xargs rm < list",
    "f() { rm x; }; f",
    "for f in $(rm x); do echo $f; done",
    "cat <<EOF\n$(rm x)\nEOF",
    "echo $((1 + 2))",
    "ls 'unterminated",
    "",
]


@pytest.mark.parametrize("command", READ_ONLY)
def test_read_only_commands(command):
    assert is_read_only_command(command)


@pytest.mark.parametrize("command", NOT_READ_ONLY)
def test_commands_that_write_or_are_unknown_are_not_read_only(command):
    assert not is_read_only_command(command)


def test_split_at_list_operators_and_pipes():
    assert split_command("ls && cat x || echo no; pwd | wc -l") == ["ls", "cat x", "echo no", "pwd", "wc -l"]


def test_split_includes_commands_inside_substitutions_and_subshells():
    assert split_command("echo $(rm x) && (cd a; ls)") == ["echo $(rm x)", "rm x", "cd a", "ls"]


def test_split_of_unparseable_command_is_the_whole_command():
    assert split_command("ls 'unterminated") == ["ls 'unterminated"]


def test_split_of_blank_command_is_empty():
    assert split_command("   ") == []
