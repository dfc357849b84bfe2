"""`zoo COMMAND --help` states every default a user would otherwise have to
find in the code (issue #37): each option whose default is a value (not
None or False, which mean "not given") shows it in its help text."""

import argparse
import re

from zoo.cli import build_parser


def _commands():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [("zoo", parser), *((f"zoo {n}", p) for n, p in sub.choices.items())]


def _has_default(action):
    # A flag (store_true, store_false, store_const: nargs 0) has no value to
    # default to; its `default` is only the flag's absence (`--cased` shares
    # `lowercase` with `--lowercase`, whose None is the real default).
    return (
        action.nargs != 0
        and action.default is not None
        and action.default is not False
        and action.default is not argparse.SUPPRESS
    )


def _rendered_help(parser, action):
    """The action's lines in `--help`, joined on single spaces (argparse wraps)."""
    formatter = parser._get_formatter()
    return " ".join(formatter._format_action(action).split())


def test_every_default_is_in_the_help():
    missing, checked = [], 0
    for command, parser in _commands():
        for action in parser._actions:
            if not _has_default(action):
                continue
            checked += 1
            text = _rendered_help(parser, action)
            shown = re.search(rf"\bdefault:? {re.escape(str(action.default))}(?!\w)", text)
            if not shown:
                name = "/".join(action.option_strings) or action.dest
                missing.append(f"{command} {name} (default {action.default!r}): {text!r}")
    # The walk reaches the options it is about (zoo finetune --epochs is 3).
    assert checked > 40
    assert not missing, "options whose --help does not state the default:\n" + "\n".join(
        missing
    )


def test_no_default_is_stated_twice():
    # A help text that states its default itself uses %(default)s, so the
    # formatter does not add a second one (and the text cannot go stale).
    for command, parser in _commands():
        for action in parser._actions:
            text = _rendered_help(parser, action)
            assert text.count("default: ") <= 1, f"{command}: {text}"


def test_finetune_epochs_shows_its_default():
    """--epochs has no fixed default: the help says how the data chooses it,
    with the numbers the rule uses."""
    from zoo.train.optimization import AUTO_EPOCHS, AUTO_MAX_EPOCHS, AUTO_MIN_UPDATES

    for command in ("zoo finetune", "zoo distill"):
        text = " ".join(dict(_commands())[command].format_help().split())
        assert (
            "passes over the data (default: chosen from the data's size: at least "
            f"{AUTO_EPOCHS} and {AUTO_MIN_UPDATES} updates, at most {AUTO_MAX_EPOCHS}"
        ) in text, command
