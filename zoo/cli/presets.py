"""`zoo presets`: the encoder presets and their parameter counts."""

from __future__ import annotations

from zoo.cli.runs import HelpFormatter, help_examples
from zoo.configs import PRESETS


def run(args):
    print(
        f"{'preset':<18} {'family':<10} {'L':>3} {'H':>5} {'A':>3} {'FF':>5} {'parameters':>13}"
    )
    for name, c in PRESETS.items():
        print(
            f"{name:<18} {c.family:<10} {c.num_layers:>3} {c.hidden_dim:>5} "
            f"{c.num_heads:>3} {c.intermediate_dim:>5} {c.num_parameters():>13,}"
        )
    return 0


def register(subparsers):
    p = subparsers.add_parser(
        "presets",
        help="list encoder presets with parameter counts",
        formatter_class=HelpFormatter,
        epilog=help_examples("zoo presets"),
    )
    p.set_defaults(func=run)
