from zoo.cli import program

raise SystemExit(program())
