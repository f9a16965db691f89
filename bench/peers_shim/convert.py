"""Runs llama.cpp's convert_hf_to_gguf.py under Debian's torch 1.13.

usage: QVL_BIN=... PYTHONPATH=LLAMA/gguf-py:bench/peers_shim /usr/bin/python3 bench/peers_shim/convert.py \
           LLAMA/convert_hf_to_gguf.py [converter arguments]

The converter names float8 dtypes that torch gained in 2.1 (as dictionary keys and in checks for FP8
checkpoints). Qwen3-VL-2B is bf16, so stand-ins that no tensor has are enough: they are added to torch
here when missing, and the converter runs unchanged.
"""
import runpy
import sys

import torch

for name in ("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float8_e4m3fnuz", "float8_e5m2fnuz"):
    if not hasattr(torch, name):
        setattr(torch, name, type(name, (), {})())  # a distinct object no tensor's dtype equals

script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(script)))
runpy.run_path(script, run_name="__main__")
