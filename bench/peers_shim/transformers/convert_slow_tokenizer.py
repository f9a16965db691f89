from . import bytes_to_unicode  # noqa: F401  (imported by the converter's Qwen code)
