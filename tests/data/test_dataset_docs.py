"""The "Datasets" section of docs/api.md: every code block runs as printed and prints what its comments say."""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _section_blocks():
    text = open(os.path.join(REPO, "docs", "api.md"), encoding="utf-8").read()
    start = text.index("### Datasets (`eager.data`)")
    end = text.index("\n## ", start)
    return re.findall(r"```python\n(.*?)```", text[start:end], re.S)


def _expected_prints(block):
    """The values the comments promise: `print(...)  # value` and a `# value` line right after a print."""
    out, lines = [], block.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"\s*(print\(.*\))\s+#\s*(.+)$", line)
        if m:
            out.append(m.group(2).strip())
        elif re.match(r"\s*print\(", line) and i + 1 < len(lines) and lines[i + 1].startswith("# "):
            out.append(lines[i + 1][2:].strip())
    return out


def test_dataset_docs_blocks_run_as_printed(tmp_path):
    blocks = _section_blocks()
    assert len(blocks) >= 2
    for k, block in enumerate(blocks):
        path = tmp_path / f"block{k}.py"
        path.write_text(block)
        proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, cwd=str(tmp_path),
                              env={**os.environ, "PYTHONPATH": REPO}, timeout=300)
        assert proc.returncode == 0, f"block {k} failed:\n{block}\n{proc.stderr[-3000:]}"
        printed = [line.strip() for line in proc.stdout.splitlines()]
        expected = _expected_prints(block)
        assert expected, f"block {k} promises no output"
        assert printed == expected, (block, proc.stdout)
