"""``simplekafka learn``: build a stage yourself, checked by its exercises (list, start, check,
hint), then run a cluster on your code (cluster)."""

from __future__ import annotations

import argparse
from pathlib import Path

from simplekafka.cli import CliError

_DIR_HELP = "your working directory (default my-simplekafka)"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("learn", help="exercises: build a stage yourself, checked")
    commands = parser.add_subparsers(dest="learn_command", metavar="ACTION",
                                     parser_class=type(parser))
    commands.required = True
    show = commands.add_parser("list", help="the exercises per stage and your progress")
    show.add_argument("dir", nargs="?", type=Path, default=Path("my-simplekafka"),
                      help=_DIR_HELP)
    show.set_defaults(func=_list)
    start = commands.add_parser("start", help="write a stage's starter module into DIR")
    start.add_argument("stage", type=int, help="the stage number, e.g. 1")
    start.add_argument("dir", nargs="?", type=Path, default=Path("my-simplekafka"),
                      help=_DIR_HELP)
    start.set_defaults(func=_start)
    check = commands.add_parser("check", help="run a stage's exercises against your code")
    check.add_argument("stage", type=int, help="the stage number, e.g. 1")
    check.add_argument("dir", nargs="?", type=Path, default=Path("my-simplekafka"),
                      help=_DIR_HELP)
    check.add_argument("--exercise", type=int, metavar="N", help="only exercise N")
    check.set_defaults(func=_check)
    hint = commands.add_parser("hint", help="a graded hint: the chapter section, then the idea")
    hint.add_argument("stage", type=int, help="the stage number, e.g. 1")
    hint.add_argument("exercise", type=int, help="the exercise number within the stage")
    hint.add_argument("dir", nargs="?", type=Path, default=Path("my-simplekafka"),
                      help=_DIR_HELP)
    hint.add_argument("--level", type=int, metavar="N", help="hint N (default: the next one)")
    hint.set_defaults(func=_hint)
    cluster = commands.add_parser(
        "cluster", help="three brokers on your passed exercises: the failover demo, checked")
    cluster.add_argument("dir", nargs="?", type=Path, default=Path("my-simplekafka"),
                      help=_DIR_HELP)
    cluster.add_argument("--base-dir", type=Path, default=None,
                         help="where the brokers keep data and logs (default: a temp dir)")
    cluster.set_defaults(func=_cluster)


def _list(args: argparse.Namespace) -> int:
    from simplekafka.learn.runner import listing

    print("\n".join(listing(args.dir)))
    return 0


def _start(args: argparse.Namespace) -> int:
    from simplekafka.learn.runner import LearnError, start

    try:
        print("\n".join(start(args.stage, args.dir)))
    except LearnError as exc:
        raise CliError(str(exc)) from None
    return 0


def _check(args: argparse.Namespace) -> int:
    from simplekafka.learn.runner import LearnError, check

    try:
        result = check(args.stage, args.dir, args.exercise)
    except LearnError as exc:
        raise CliError(str(exc)) from None
    for number in result.passed:
        exercise = result.stage.exercise(number)
        print(f"ok     stage {result.stage.number} exercise {number} ({exercise.title})")
    if not result.ok:
        print("\n".join(result.report))
        return 1
    print(f"stage {result.stage.number}: every exercise checked passes")
    return 0


def _hint(args: argparse.Namespace) -> int:
    from simplekafka.learn.runner import LearnError, hint

    try:
        print("\n".join(hint(args.stage, args.exercise, args.dir, args.level)))
    except LearnError as exc:
        raise CliError(str(exc)) from None
    return 0


def _cluster(args: argparse.Namespace) -> int:
    from simplekafka.learn.cluster import run

    if not args.dir.is_dir():
        raise CliError(f"{args.dir} is not a directory (simplekafka learn start 7 {args.dir})")
    try:
        return run(args.dir, args.base_dir)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # one clear sentence, as the demo ends
        print(f"learn cluster failed: {type(exc).__name__}: {exc}")
        return 1
