"""fairseq-tree-view's pages in a real browser: headless Chromium (Debian's ``chromium``: ``make browser``, run by
``.ci/run``) driven over the DevTools protocol (fairseq_tree/view/browser.py). The page draws a known tree with the
right number of node and word elements, element for element as Python's ``tree_svg`` draws it (also every tree
of the PTB sample's valid split, with no two crossing lines); marks the hand-made pair's missing / extra brackets;
searches and filters; a click on the list shows that sentence; a word ``<script>..`` is text; the page makes no
request. No Chromium is a failure, not a skip."""

import json
import sys
from pathlib import Path

import pytest
from conftest import SHARED, run_command

from fairseq_tree.trees.svg import tree_svg
from fairseq_tree.view import page, records
from fairseq_tree.view.browser import Chromium, find_chromium

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from test_tree_layout import crossings  # noqa: E402  (the one segment-crossing counter of both layout tests)

pytestmark = pytest.mark.slow(minutes=1)  # measured: 15-40 s on the busy 2-core box (a CLI run, Chromium's start)

FIVE = "(S (NP (DT the) (NN cat)) (VP (VBD saw) (NP (DT a) (NN dog))))"
GOLD = "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))"
PRED = "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the)) (NN mat))) (. .))"
SCRIPT = "<script>window.pwned=1</script>"
GOLD2 = f"(S (NP (PRP It)) (VP (VBZ is) (ADJP (JJ {SCRIPT}))) (. .))"
PRED2 = f"(S (NP (PRP It)) (VP (VBZ is) (NP (JJ {SCRIPT}))) (. .))"

# every element under an <svg>: [tag, class, sorted attributes, text]
ELEMENTS = """((svg) => [...svg.querySelectorAll('*')].map(e => [
  e.tagName, e.getAttribute('class'),
  [...e.attributes].filter(a => a.name !== 'class').map(a => [a.name, a.value]).sort(),
  e.tagName === 'text' ? e.textContent : null]))"""
# ... under the first tree of #detail (or the k-th)
SERIALIZE = f"((k) => {ELEMENTS}(document.querySelectorAll('#detail svg.tree')[k]))"


def python_elements(svg: str):
    import xml.etree.ElementTree as ET

    root = ET.fromstring(svg)
    return [[e.tag.split("}")[1], e.get("class"), sorted([k, v] for k, v in e.attrib.items() if k != "class"),
             e.text if e.tag.endswith("text") else None] for e in root.iter() if e is not root]


@pytest.fixture(scope="module")
def browser():
    if not find_chromium():
        pytest.fail("no Chromium: `make browser` installs Debian's chromium (CI runs it); this test does not skip")
    with Chromium() as b:
        yield b


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    d = tmp_path_factory.mktemp("view")
    (d / "gold.mrg").write_text(f"{GOLD}\n{GOLD2}\n")
    (d / "pred.txt").write_text(f"{PRED}\n{PRED2}\n")
    (d / "five.mrg").write_text(FIVE + "\n")
    run_command(sys.executable, "-m", "fairseq_tree.cli.view", d / "compare.html", "--trees", d / "gold.mrg",
                "--pred", d / "pred.txt")
    page("treebank", records.treebank_records(str(d / "five.mrg"))).save(str(d / "five.html"))
    (d / "sst.txt").write_text("(3 (2 A) (4 (4 lovely) (2 film)))\n(1 (2 No) (1 fun))\n")
    (d / "classes.txt").write_text("3\n2\n")
    page("sst", *records.sst_records(str(d / "sst.txt"), str(d / "classes.txt"))).save(str(d / "sst.html"))
    (d / "att.jsonl").write_text(json.dumps({"words": ["a", "b", "c"], "tree": "(S a (S b c))", "maps": {
        "prior_layer0": [[1, 0.5, 0], [0.5, 1, 0.2], [0, 0.2, 1]]}}) + "\n")
    page("attention", *records.attention_records(str(d / "att.jsonl"))).save(str(d / "att.html"))
    (d / "induced.txt").write_text("(S a (S b c))\n")
    (d / "deps.conllu").write_text("1\ta\t_\t_\t_\t_\t0\tdep\t_\t_\n2\tb\t_\t_\t_\t_\t1\tdep\t_\t_\n"
                                   "3\tc\t_\t_\t_\t_\t2\tdep\t_\t_\n\n")
    page("induced", *records.induced_records(str(d / "induced.txt"), str(d / "deps.conllu"))).save(
        str(d / "induced.html"))
    return d


def test_known_tree_node_and_word_elements(browser, pages):
    browser.open((pages / "five.html").as_uri())
    count = "document.querySelectorAll('#detail svg.tree {}').length"
    assert browser.eval(count.format("g.node")) == 4  # NP(0,2) NP(3,5) VP(2,5) S(0,5)
    assert browser.eval(count.format("g.leaf")) == 5
    assert browser.eval(count.format("text.word")) == 5
    assert browser.eval(count.format("line.edge")) == 8  # 3 non-root nodes + 5 leaves
    words = browser.eval("[...document.querySelectorAll('#detail text.word')].map(e => e.textContent)")
    assert words == ["the", "cat", "saw", "a", "dog"]


def test_the_script_draws_what_python_draws(browser, pages):
    cases = [("five.html", records.treebank_records(str(pages / "five.mrg")))]
    cases.append(("compare.html", records.compare_records(str(pages / "gold.mrg"), str(pages / "pred.txt"))[0]))
    cases.append(("sst.html", records.sst_records(str(pages / "sst.txt"), str(pages / "classes.txt"))[0]))
    cases.append(("induced.html", records.induced_records(str(pages / "induced.txt"), str(pages / "deps.conllu"))[0]))
    for name, sents in cases:
        browser.open((pages / name).as_uri())
        for k, rec in enumerate(sents):
            browser.eval(f"window.__view.show({k})")
            for t in range(len(rec["trees"])):
                got = browser.eval(f"{SERIALIZE}({t})")
                assert got == python_elements(records.record_svg(rec, t)), (name, k, t)


VALID = SHARED / "data" / "ptb_sample" / "valid.mrg"


def test_the_script_lays_out_the_ptb_sample_as_python_does_without_a_crossing(browser, tmp_path):
    """Every tree of the PTB sample's valid split, with its tags and without: the script's drawing is Python's,
    coordinate for coordinate, and no two of its lines (edges, drops) cross."""
    if not VALID.exists():
        pytest.fail(f"no {VALID}: the shared PTB sample")
    sents = records.treebank_records(str(VALID))
    page("treebank", sents).save(str(tmp_path / "valid.html"))
    browser.open((tmp_path / "valid.html").as_uri())
    got = browser.eval(f"""window.__view.data.sentences.map(rec => [
        {ELEMENTS}(window.__view.drawRecordTree(rec, rec.trees[0])),
        {ELEMENTS}(window.__view.drawTree(rec.w, rec.w.map(() => null), rec.trees[0].n))])""")
    assert len(got) == len(sents) == 273
    lines = 0
    for rec, (tagged, bare) in zip(sents, got):
        nodes = [tuple(x) for x in rec["trees"][0]["n"]]
        assert tagged == python_elements(records.record_svg(rec)), rec["i"]
        assert bare == python_elements(tree_svg(rec["w"], [None] * len(rec["w"]), nodes)), rec["i"]
        for drawing in (tagged, bare):
            segs = [((int(a["x1"]), int(a["y1"])), (int(a["x2"]), int(a["y2"])))
                    for tag, _, attrs, _ in drawing if tag == "line" for a in [dict(attrs)]]
            assert crossings(segs) == [], rec["i"]
            lines += len(segs)
    assert lines > 30_000


def test_missing_and_extra_brackets_are_highlighted(browser, pages):
    browser.open((pages / "compare.html").as_uri())
    marked = """[...document.querySelectorAll('#detail svg.tree')].map(svg =>
        [...svg.querySelectorAll('g.node.missing, g.node.extra')].map(g =>
            [g.getAttribute('class'), g.dataset.span, g.textContent]))"""
    assert browser.eval(marked) == [[["node missing", "4-6", "NP"]], [["node extra", "4-5", "NP"]]]
    colour = "getComputedStyle(document.querySelector('#detail g.node.{} text')).fill"
    assert browser.eval(colour.format("missing")) == "rgb(221, 0, 0)"
    assert browser.eval(colour.format("extra")) == "rgb(224, 112, 0)"
    assert browser.eval("document.querySelector('#detail h2').textContent").startswith("Sentence 1 \u2014 F1 80 ")
    summary = browser.eval("[...document.querySelectorAll('#summary div')].map(d => d.textContent)")
    assert "F177.78" in summary  # 7 of 9 brackets each way over the two sentences


def test_click_a_sentence_escaping_and_screenshot(browser, pages, tmp_path):
    browser.open((pages / "compare.html").as_uri())
    assert browser.eval("document.querySelectorAll('#list li').length") == 2
    browser.click("#list li:nth-child(2)")
    assert browser.eval("document.querySelector('#detail h2').textContent").startswith("Sentence 2 \u2014 F1 75 ")
    assert browser.eval("location.hash") == "#2"
    assert browser.eval("document.querySelector('#list li.selected').dataset.k") == "1"
    words = browser.eval("[...document.querySelectorAll('#detail svg.tree')[0].querySelectorAll('text.word')]"
                         ".map(e => e.textContent)")
    assert words == ["It", "is", SCRIPT, "."]  # the word is text ...
    assert browser.eval("typeof window.pwned") == "undefined"  # ... and nothing ran
    assert browser.eval("document.querySelectorAll('script').length") == 2  # the data and the page's own
    assert browser.eval("[...document.querySelectorAll('#detail g.node.missing')].map(g => g.textContent)") == [
        "ADJP"]
    png = browser.screenshot(str(tmp_path / "shot.png"))
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


def test_search_and_filters(browser, pages):
    browser.open((pages / "compare.html").as_uri())
    rows = "[...document.querySelectorAll('#list li .sid')].map(e => e.textContent)"

    def set_value(id_, value, event="input"):
        browser.eval(f"(() => {{ const e = document.getElementById('{id_}'); e.value = {json.dumps(value)}; "
                     f"e.dispatchEvent(new Event('{event}')); }})()")

    set_value("q", "MAT")
    assert browser.eval(rows) == ["#1"]
    set_value("q", "")
    set_value("fmin", "78")
    assert browser.eval(rows) == ["#1"]  # F1 80 and 75
    set_value("fmin", "")
    set_value("label", "ADJP", "change")  # a wrong ADJP bracket: sentence 2 only
    assert browser.eval(rows) == ["#2"]
    set_value("label", "", "change")
    set_value("lmax", "4")
    assert browser.eval(rows) == ["#2"]
    set_value("lmax", "")
    set_value("sort", "f", "change")
    assert browser.eval(rows) == ["#2", "#1"]
    assert browser.eval("document.getElementById('count').textContent") == "1\u20132 of 2 sentences"


def test_other_views(browser, pages):
    browser.open((pages / "sst.html").as_uri())
    classes = "[...document.querySelectorAll('#detail g.node')].map(g => g.getAttribute('class'))"
    assert browser.eval(classes) == ["node c-4", "node c-3"]
    assert browser.eval("[...document.querySelectorAll('#list li')].map(li => [li.className, "
                        "li.querySelector('.sf').textContent])") == [["selected", "3\u21923"], ["bad", "1\u21922"]]
    assert browser.eval("getComputedStyle(document.querySelector('#detail g.c-4 text')).fill") == "rgb(33, 102, 172)"
    browser.open((pages / "att.html").as_uri())
    assert browser.eval("document.querySelectorAll('#detail svg.heat rect.cell').length") == 9
    assert browser.eval("document.querySelectorAll('#detail svg.tree g.node').length") == 2
    browser.open((pages / "induced.html").as_uri())
    assert browser.eval("document.querySelectorAll('#detail svg.arcs .arc').length") == 3  # 2 arcs and the root
    assert browser.eval("document.querySelectorAll('#detail svg.tree g.node').length") == 2


def test_the_pages_make_no_request(browser, pages):
    browser.events.clear()
    for name in ("compare.html", "five.html", "sst.html", "att.html", "induced.html"):
        browser.open((pages / name).as_uri())
        browser.click("#list li")
        assert browser.eval("performance.getEntriesByType('resource').length") == 0
    urls = browser.requests()
    assert urls and all(u.startswith("file://") and u.endswith(".html") for u in urls), urls
