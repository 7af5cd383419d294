"""The data docs' libraries come from the install, not from CDNs. Plain Python; the
browser test is in test_analytics.py."""

import re
from importlib.util import find_spec
from pathlib import Path

from catalake.platform.quality.webassets import ASSETS, SITE_FOLDER, localize, vendored

# the installed package's templates, found without importing it (importing GX takes seconds)
TEMPLATES = Path(find_spec("great_expectations").origin).parent / "render" / "view" / "templates"
LOADED = re.compile(r'<(?:script|link)\b[^>]*?(?:src|href)="(https?://[^"{]+)"')


def test_every_library_the_gx_templates_load_is_vendored():
    loaded = {url for page in TEMPLATES.rglob("*.j2") for url in LOADED.findall(page.read_text())}
    assert loaded and loaded <= set(ASSETS), sorted(loaded - set(ASSETS))
    assert vendored() is not None, "make setup vendors web/node_modules into the package"


def test_a_page_is_pointed_at_the_sites_copies(tmp_path):
    site = tmp_path / "site"
    page = site / "validations" / "t" / "2026-11-20" / "page.html"
    page.parent.mkdir(parents=True)
    page.write_text(
        '<script src="https://code.jquery.com/jquery-3.7.1.min.js" integrity="sha384-x" crossorigin="anonymous"></script>\n'
        '<a href="https://greatexpectations.io">docs</a>\n')
    assert localize(site, [page]) == 1
    html = page.read_text()
    assert '<script src="../../../static/vendor/jquery/dist/jquery.min.js"></script>' in html
    assert '<a href="https://greatexpectations.io">' in html  # a link is not a load
    assert (site / SITE_FOLDER / "jquery/dist/jquery.min.js").read_bytes().startswith(b"/*! jQuery v3.7.1")
    assert localize(site, [page]) == 0  # nothing left to rewrite
