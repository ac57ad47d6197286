#!/bin/sh
# Run test_mcp_client.py with the Python that has the MCP SDK: .mcp-venv/
# (scripts/deps.sh --test makes it), else python3. Where deps.sh found the
# SDK cannot be installed (.mcp-venv/UNAVAILABLE) the test skips (77) and
# says why; an SDK that is simply missing fails the test.
# usage: run_client.sh KL SOURCE_DIR [CASE]
SRC=$2
PY=python3
[ -x "$SRC/.mcp-venv/bin/python" ] && PY="$SRC/.mcp-venv/bin/python"
if [ -f "$SRC/.mcp-venv/UNAVAILABLE" ]; then
  cat "$SRC/.mcp-venv/UNAVAILABLE"
  export KL_MCP_SDK_MISSING_OK=1
fi
exec "$PY" "$(dirname "$0")/test_mcp_client.py" "$@"
