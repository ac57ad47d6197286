"""The case's build step: a candidate without a rate does not build."""
import json
import sys

cand = json.load(open(sys.argv[1]))
if "rate" not in cand and cand.get("mode", "ok") == "ok":
    print("build: %s has no rate" % sys.argv[1])
    sys.exit(1)
print("built")
