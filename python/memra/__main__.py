"""python -m memra COMMAND: `report` merges bench receipts (memra.report). Needs no libmemra."""

import sys

USAGE = ("usage: python -m memra report RECEIPTS... [--md|--csv] [--plot FILE.png|.svg] [--arm A,..] [--m M,..]\n"
         "                             [--sheet S,..] [--machine H,..]  ('report -h' for more)\n")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        return 0 if argv else 2
    if argv[0] == "report":
        from . import report
        return report.main(argv[1:])
    sys.stderr.write("python -m memra: unknown command %r\n%s" % (argv[0], USAGE))
    return 2


if __name__ == "__main__":
    sys.exit(main())
