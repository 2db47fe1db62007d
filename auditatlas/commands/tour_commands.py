"""``auditatlas tours`` (list, show, import, remove) and ``auditatlas export-tour NAME --out FILE``.

``tours show NAME --json`` prints a tour in the form ``tours import FILE`` reads, so a tour made
on one store is saved into another (its stops are links: they open there on the same data,
and a stop whose values that store lacks says so when shown or exported).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from urllib.parse import urlencode

from ..errors import AtlasError
from .board_commands import APP_URL_HELP, export_link


def add_parsers(sub: argparse._SubParsersAction) -> None:
    listing = sub.add_parser("tours", help="the guided tours saved in the store (/tour); show, import or remove one")
    listing.add_argument("--json", action="store_true")
    actions = listing.add_subparsers(dest="tours_command", metavar="ACTION")
    show = actions.add_parser("show", help="one tour's stops (its latest version); --json is what `import` reads")
    show.add_argument("name", metavar="NAME")
    show.add_argument("--json", action="store_true")
    imported = actions.add_parser("import", help="save a tour from a JSON file (as `tours show NAME --json` prints)")
    imported.add_argument("file", metavar="FILE.json")
    imported.add_argument("--name", help="save it under this name instead of the file's")
    removed = actions.add_parser("remove", help="remove a tour (its earlier versions stay in the store's history)")
    removed.add_argument("name", metavar="NAME")
    listing.set_defaults(run=run)
    export = sub.add_parser("export-tour", help="write a saved tour, every stop, as one self-contained offline HTML file")
    export.add_argument("name", metavar="NAME")
    export.add_argument("--out", required=True, metavar="FILE.html", help="the file to write")
    export.add_argument("--app-url", metavar="URL", help=APP_URL_HELP)
    export.set_defaults(run=run, reads=True)


def run(args: argparse.Namespace, root: Path) -> int:
    """A tour's file is its link's export (``export URL --out FILE``)."""
    import queries

    from ..views import tours

    if args.command == "export-tour":
        return export_link(root, "/tour?" + urlencode({"name": args.name}), args.out, args.app_url)
    query = queries.runner(root)
    action = getattr(args, "tours_command", None)
    if action == "show":
        return _show(query, args.name, args.json)
    if action == "import":
        return _import(root, args.file, args.name)
    if action == "remove":
        if not tours.remove(root, args.name, query):
            raise AtlasError(f"the store holds no tour named '{args.name}'; `auditatlas tours` lists them.")
        print(f"removed the tour '{args.name}' (its earlier versions stay in the store's history)")
        return 0
    return _list(query, args.json)


def _list(query, as_json: bool) -> int:
    from ..views import tours

    listing = tours.listing(query)
    if as_json:
        print(json.dumps({"tours": listing.astype(object).where(listing.notna(), None).to_dict("records")}, indent=2))
        return 0
    if listing.empty:
        print("the store holds no tour; make one on the app's pages (sidebar: Tour) and save it on /tour.")
        return 0
    for row in listing.itertuples(index=False):
        by = f" by {row.author}" if isinstance(row.author, str) else ""
        print(f"{row.name}  ({row.stops} stops, saved {row.saved_at}{by}, {row.versions} version(s))")
    return 0


def _show(query, name: str, as_json: bool) -> int:
    from ..views import tours

    tour = tours.read(query, name)
    if tour is None:
        raise AtlasError(f"the store holds no tour named '{name}'; `auditatlas tours` lists them.")
    if as_json:
        print(json.dumps(tour.to_json(), indent=2, ensure_ascii=False))
        return 0
    print(f"{tour.name}: {len(tour.stops)} stops, saved {tour.saved_at} (version {tour.version_id})")
    for i, stop in enumerate(tour.stops, start=1):
        print(f"{i:>3}. {stop.link}\n     {stop.sentence}")
    return 0


def _import(root: Path, file: str, name: str | None) -> int:
    from ..views import tours

    try:
        data = json.loads(Path(file).read_text(encoding="utf-8"))
    except OSError as exc:
        raise AtlasError(f"{file} cannot be read ({exc.strerror or exc}).") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise AtlasError(f"{file} is not JSON ({exc}); it should be what `auditatlas tours show NAME --json` prints.") from None
    except RecursionError:  # json's parser recurses: arrays nested thousands deep exhaust the stack
        raise AtlasError(f"{file} nests arrays or objects thousands of levels deep; a tour is an object of "
                         "stops (what `auditatlas tours show NAME --json` prints).") from None
    tour = tours.Tour.from_json(data, where=file)
    saved = tours.save(root, tour.renamed(name) if name else tour)
    print(f"saved the tour '{saved.name}' ({len(saved.stops)} stops) into {root}")
    return 0
