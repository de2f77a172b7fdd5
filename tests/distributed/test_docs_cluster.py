"""The docs' code blocks that start Ray (`ray://local`) run as printed, in this process's Ray."""
import os

import doc_blocks


def test_cluster_code_blocks_run_as_printed(ray_local, tmp_path, monkeypatch):
    found = [b for doc in doc_blocks.documents() for b in doc_blocks.blocks(doc) if b.needs_ray and not b.skip]
    assert {b.doc for b in found} >= {"README.md", "docs/distributed.md"}
    monkeypatch.chdir(tmp_path)                      # blocks write checkpoints into the current directory
    for b in found:
        doc_blocks.run_here(b, str(tmp_path))
    assert os.listdir(tmp_path)
