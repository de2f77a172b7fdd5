"""Crafting a saved-function manifest as an attacker would: after changing it, recompute its own checksum."""
import json

from tracing.save import format as fmt


def resealed(data: bytes) -> bytes:
    """Manifest bytes with `manifest_sha256` recomputed for their content (unchanged when they are not a JSON
    object that can be checksummed: the loader refuses those before it reads the checksum)."""
    try:
        doc = json.loads(data)
        if not isinstance(doc, dict):
            return data
        return json.dumps(fmt.seal_manifest(doc)).encode()
    except (ValueError, RecursionError, TypeError, UnicodeDecodeError):
        return data
