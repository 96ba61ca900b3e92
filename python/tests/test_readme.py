"""README.md's Python examples (```pycon blocks, >>> prompts) run as doctests."""
import doctest
import os
import re

from conftest import source_dir


def test_readme_python_blocks():
    text = open(os.path.join(source_dir(), "README.md"), encoding="utf-8").read()
    blocks = re.findall(r"```pycon\n(.*?)```", text, re.S)
    assert blocks, "README.md has no ```pycon block"
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(
        optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    globs = {}
    for i, block in enumerate(blocks):
        test = parser.get_doctest(block, globs, f"README.md pycon block {i + 1}", "README.md", 0)
        runner.run(test, clear_globs=False)
        globs.update(test.globs)  # later blocks use earlier names, as in one session
    failed, attempted = runner.summarize(verbose=False)
    assert attempted > 0 and failed == 0
