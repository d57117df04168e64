"""The command line as users read it (issue 25): every option of every subcommand has help text, every
`gpukit ...` command that the README, docs/*.md or a help text names exists (and parses; the cheap ones
run), and --help stays within HELP_WIDTH columns."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from gpukit.cli import TEXT_WIDTH, build_parser, fit_width, main

ROOT = Path(__file__).resolve().parent.parent
HELP_WIDTH = TEXT_WIDTH  # the stated width of --help and of text output at a terminal (120)
# commands that start torch, ranks or a network lab: parsed, never run here
EXPENSIVE = {"bench", "validate", "calibrate", "netlab"}


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ("gpukit",)):
    """(command path, parser) for the root and every subcommand, depth first."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen = set()
            for name, sub in action.choices.items():
                if id(sub) in seen:  # an alias (links / interconnects) is the same parser
                    continue
                seen.add(id(sub))
                yield from _walk(sub, (*path, name))


PARSERS = list(_walk(build_parser()))


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_every_option_of_every_subcommand_has_help():
    missing = [
        f"{' '.join(path)} {'/'.join(a.option_strings) or a.dest}"
        for path, p in PARSERS
        for a in p._actions
        if not isinstance(a, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction))
        and (not a.help or a.help == argparse.SUPPRESS)
    ]
    assert len(PARSERS) > 20 and not missing, missing


def test_the_walk_sees_an_option_without_help():
    """The check above can fail: an option added without help= is reported."""
    p = argparse.ArgumentParser(prog="x")
    p.add_argument("--bare")
    bare = [a for a in p._actions if not isinstance(a, argparse._HelpAction) and not a.help]
    assert [a.dest for a in bare] == ["bare"]


@pytest.mark.parametrize("path", [" ".join(path) for path, _ in PARSERS])
def test_help_fits_the_stated_width(path, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", str(HELP_WIDTH))
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args([*path.split()[1:], "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    wide = [line for line in out.splitlines() if len(line) > HELP_WIDTH]
    assert out.strip() and not wide, wide


# ---- every `gpukit ...` command named in the README, docs/*.md and the help texts exists


def _resolves(words: list[str]) -> str | None:
    """None when the leading command words name a real (sub)command, else what is wrong."""
    parser, path = PARSERS[0][1], ["gpukit"]
    for word in words:
        subs = _subcommands(parser)
        if not subs:
            return None  # a leaf: the rest are its arguments
        if word not in subs:
            return f"`{' '.join(path)} {word}`: no such command (has: {', '.join(sorted(subs))})"
        parser, path = subs[word], [*path, word]
    return None


def _command_words(text: str) -> list[list[str]]:
    """The command-name words of an inline `gpukit ...` mention; `a | b` and `a|b` expand to one each."""
    words = []
    for tok in text.split()[1:]:
        if tok.startswith(("-", "[", "<", "{", "#")) or not re.fullmatch(r"[a-z][a-z0-9|-]*|\|", tok):
            break
        words.append(tok)
    # join "a | b | c" into "a|b|c", then expand the alternatives at each position
    joined = " ".join(words).replace(" | ", "|").split()
    out = [[]]
    for w in joined:
        out = [[*o, alt] for o in out for alt in w.split("|") if alt]
    return out


def _doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _doc_commands() -> tuple[list[tuple[str, str]], list[tuple[str, list[str]]]]:
    """(where, full command line) of the code-block lines that run gpukit, and (where, command words)
    of the inline `gpukit ...` mentions."""
    lines, inline = [], []
    for f in _doc_files():
        text = f.read_text()
        in_code = False
        for n, line in enumerate(text.splitlines(), 1):
            if line.lstrip().startswith("```"):
                in_code = not in_code
                continue
            where = f"{f.name}:{n}"
            if in_code:
                m = re.match(r"\s*(?:\$ )?(?:\.venv/bin/)?(gpukit .*)", line)
                if m:
                    lines.append((where, m.group(1).split(" #")[0].strip()))
        # inline spans may wrap across a line break
        for m in re.finditer(r"`(gpukit\s[^`]*)`", text):
            n = text.count("\n", 0, m.start()) + 1
            for words in _command_words(m.group(1)):
                inline.append((f"{f.name}:{n}", words))
    return lines, inline


DOC_LINES, DOC_INLINE = _doc_commands()


def test_the_docs_name_commands():
    assert len(DOC_LINES) >= 10 and len(DOC_INLINE) >= 10  # the collector finds them


@pytest.mark.parametrize("where,words", DOC_INLINE, ids=[w for w, _ in DOC_INLINE])
def test_inline_doc_command_exists(where, words):
    assert _resolves(words) is None, f"{where}: {_resolves(words)}"


class _Terminal(io.StringIO):
    """stdout as a user's terminal: text output is wrapped to the stated width there."""

    def isatty(self):
        return True


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = _Terminal(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as e:  # --help, --version
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("where,line", DOC_LINES, ids=[w for w, _ in DOC_LINES])
def test_doc_command_line_parses_and_the_cheap_ones_run(where, line):
    argv = shlex.split(line)[1:]
    assert _resolves([a for a in argv if not a.startswith("-")][:2]) is None, where
    build_parser().parse_args(argv)  # the real parser; a bad flag raises CliError
    if argv and argv[0] in EXPENSIVE:
        return
    rc, out, err = _run(argv)
    assert rc == 0, f"{where}: `{line}` exited {rc}: {err}"
    if "--json" not in argv and "--help" not in argv:
        wide = [x for x in out.splitlines() if len(x) > HELP_WIDTH]
        assert not wide, f"{where}: text output wider than {HELP_WIDTH} columns: {wide[:3]}"


def _help_strings():
    for path, p in PARSERS:
        choices = [
            c for a in p._actions if isinstance(a, argparse._SubParsersAction) for c in a._choices_actions
        ]
        for text in (p.description, p.epilog, *(a.help for a in [*p._actions, *choices])):
            if text and text != argparse.SUPPRESS:
                yield " ".join(path), text


HELP_MENTIONS = sorted(
    {
        (path, m.group(0))
        for path, text in _help_strings()
        for m in re.finditer(r"\bgpukit((?: (?:[a-z][a-z0-9-]*|\|))+)", text)
    }
)


def test_help_texts_name_commands():
    assert len(HELP_MENTIONS) >= 10


@pytest.mark.parametrize("where,mention", HELP_MENTIONS, ids=[f"{w}: {m}" for w, m in HELP_MENTIONS])
def test_command_named_in_a_help_text_exists(where, mention):
    bad = [_resolves(words) for words in _command_words(mention)]
    assert not any(bad), f"help of `{where}` names {mention!r}: {[b for b in bad if b]}"


def test_fit_width_wraps_long_lines_and_keeps_short_ones():
    long = "  assumes: " + "word " * 60
    wrapped = fit_width("a short line\n" + long, 40).splitlines()
    assert wrapped[0] == "a short line" and len(wrapped) > 3
    assert all(len(x) <= 40 for x in wrapped) and wrapped[2].startswith("    word")
    assert " ".join(x.strip() for x in wrapped[1:]) == long.strip()


def test_a_command_that_does_not_exist_is_caught():
    """The checks above can fail: the old `gpukit catalogs models` and a wrong leaf are reported."""
    assert _resolves(["catalogs", "models"]) is not None
    assert _resolves(["cost", "buy"]) is not None
    assert _resolves(["cost", "buy-vs-rent"]) is None
    assert _command_words("gpukit gpus | models | links") == [["gpus"], ["models"], ["links"]]
