"""`fathom terminal check`: whether this machine can run the conductor's terminal sandbox (bubblewrap)."""

from django.core.management.base import CommandError

from harness.conductor.terminal import bwrap_path, sandbox_check


def register(subparsers):
    terminal = subparsers.add_parser("terminal", help="the conductor's terminal worker")
    terminal_commands = terminal.add_subparsers(dest="terminal_command", required=True)
    check = terminal_commands.add_parser(
        "check", help="set up the terminal's sandbox once and say whether it works (exit 1 when it does not)")
    check.set_defaults(handler=_check)


def _check(command, options):
    problem = sandbox_check()
    if problem:
        raise CommandError(f"terminal sandbox: unavailable: {problem}. The terminal (off by default) refuses "
                           f"every command until then; everything else runs.")
    command.stdout.write(f"terminal sandbox: ready ({bwrap_path()})")
