"""The data docs work offline: the JS/CSS that Great Expectations' page templates load from CDNs
are served from the docs site itself.

They come from npm packages installed with the project (`web/package.json`, exact versions;
`make setup` runs `npm ci` and `vendor()` copies the files below into the package's
`static/datadocs`, which ships in the wheel). Nothing is fetched at run time: `localize()`
copies the vendored files into the site (`static/vendor/`) and points each page at them. The
URL table is GX 1.24's templates; a URL it does not list stays as it is (and the offline
browser test would show it). Written here because GX has no setting for where its pages load
their libraries from.
"""

from __future__ import annotations

import os
import re
import shutil
from importlib import resources
from pathlib import Path
from typing import Iterable

# URL in GX's templates -> the file of the npm package that holds it
ASSETS = {
    "https://code.jquery.com/jquery-3.7.1.min.js": "jquery/dist/jquery.min.js",
    "https://maxcdn.bootstrapcdn.com/bootstrap/4.3.1/css/bootstrap.min.css": "bootstrap/dist/css/bootstrap.min.css",
    "https://stackpath.bootstrapcdn.com/bootstrap/4.3.1/js/bootstrap.min.js": "bootstrap/dist/js/bootstrap.min.js",
    "https://cdnjs.cloudflare.com/ajax/libs/popper.js/1.12.9/umd/popper.min.js": "popper.js/dist/umd/popper.min.js",
    "https://cdnjs.cloudflare.com/ajax/libs/bootstrap-datepicker/1.9.0/css/bootstrap-datepicker.min.css":
        "bootstrap-datepicker/dist/css/bootstrap-datepicker.min.css",
    "https://cdnjs.cloudflare.com/ajax/libs/bootstrap-datepicker/1.9.0/js/bootstrap-datepicker.min.js":
        "bootstrap-datepicker/dist/js/bootstrap-datepicker.min.js",
    "https://unpkg.com/bootstrap-table@1.19.1/dist/bootstrap-table.min.css": "bootstrap-table/dist/bootstrap-table.min.css",
    "https://unpkg.com/bootstrap-table@1.19.1/dist/bootstrap-table.min.js": "bootstrap-table/dist/bootstrap-table.min.js",
    "https://unpkg.com/bootstrap-table@1.19.0/dist/extensions/filter-control/bootstrap-table-filter-control.min.css":
        "bootstrap-table/dist/extensions/filter-control/bootstrap-table-filter-control.min.css",
    "https://unpkg.com/bootstrap-table@1.19.0/dist/extensions/filter-control/bootstrap-table-filter-control.css":
        "bootstrap-table/dist/extensions/filter-control/bootstrap-table-filter-control.css",
    "https://unpkg.com/bootstrap-table@1.19.1/dist/extensions/filter-control/bootstrap-table-filter-control.min.js":
        "bootstrap-table/dist/extensions/filter-control/bootstrap-table-filter-control.min.js",
    "https://cdnjs.cloudflare.com/ajax/libs/font-awesome/6.6.0/css/all.min.css": "@fortawesome/fontawesome-free/css/all.min.css",
    "https://cdn.jsdelivr.net/npm/@forevolve/bootstrap-dark@1.1.0/dist/css/bootstrap-prefers-dark.css":
        "@forevolve/bootstrap-dark/dist/css/bootstrap-prefers-dark.css",
    "https://cdn.jsdelivr.net/npm/vega@5": "vega/build/vega.min.js",
    "https://cdn.jsdelivr.net/npm/vega-lite@5": "vega-lite/build/vega-lite.min.js",
    "https://cdn.jsdelivr.net/npm/vega-embed@6": "vega-embed/build/vega-embed.min.js",
}
FOLDERS = ("@fortawesome/fontawesome-free/webfonts",)  # what the CSS loads by relative URL
# the GX logos are images on S3 (with a tracking query), in tags and in CSS `url('...')`: the
# site's own copy instead
LOGO = re.compile(r'https://great-expectations-web-assets\.s3\.[^"\')\s]*')
# a tag loading a local copy: the CDN's Subresource Integrity and CORS attributes make a browser
# refuse a file:// page's own files, so they go (the copies come from the lockfile's packages)
LOCAL_TAG = re.compile(r'<(?:script|link)\b[^>]*static/vendor/[^>]*>')
CORS = re.compile(r'\s+(?:integrity|crossorigin)="[^"]*"')
VENDORED = "static/datadocs"  # in the catalake package
SITE_FOLDER = "static/vendor"  # in the docs site


def vendor(node_modules: Path, target: Path) -> int:
    """Copy the files the pages need from an `npm ci` of web/package.json into `target`."""
    count = 0
    for rel in [*ASSETS.values(), *FOLDERS]:
        source, dest = node_modules / rel, target / rel
        if not source.exists():
            raise FileNotFoundError(f"{source}: run `npm ci` in web/ first (make setup does)")
        dest.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, dest, dirs_exist_ok=True)
            count += sum(1 for _ in dest.rglob("*"))
        else:
            shutil.copyfile(source, dest)
            count += 1
    return count


def vendored() -> Path | None:
    """The package's vendored files, when the install made them."""
    folder = Path(str(resources.files("catalake") / VENDORED))
    return folder if all((folder / rel).exists() for rel in ASSETS.values()) else None


def localize(site: Path, pages: Iterable[Path]) -> int:
    """Serve the libraries from the site: the vendored files into `static/vendor`, and in each
    page every listed CDN URL replaced by its relative path. Returns the pages rewritten (0
    when the install vendored nothing: the pages then keep their CDN URLs)."""
    source = vendored()
    if source is None:
        return 0
    target = site / SITE_FOLDER
    if not (target / next(iter(ASSETS.values()))).exists():
        shutil.copytree(source, target, dirs_exist_ok=True)
    logo = site / "static" / "images" / "logo-long.png"
    changed = 0
    for page in pages:
        html = page.read_text(encoding="utf-8")
        local = html
        for url, rel in ASSETS.items():
            if url in local:
                local = local.replace(f'"{url}"', f'"{os.path.relpath(target / rel, page.parent)}"')
        if local != html:
            local = LOCAL_TAG.sub(lambda m: CORS.sub("", m.group(0)), local)
        if logo.exists():
            local = LOGO.sub(os.path.relpath(logo, page.parent), local)
        if local != html:
            page.write_text(local, encoding="utf-8")
            changed += 1
    return changed


def main(argv: list[str] | None = None) -> int:
    """`python -m catalake.platform.quality.webassets <node_modules> [<target>]`: the install step."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    node_modules = Path(args[0]) if args else Path("web/node_modules")
    target = Path(args[1]) if len(args) > 1 else Path(str(resources.files("catalake") / VENDORED))
    print(f"{vendor(node_modules, target)} data docs files vendored into {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
