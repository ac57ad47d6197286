/* kl: the command-line frontend of libkernlab.
 *
 * `kl <verb> [options]`. Each verb lives in its own file and calls only the
 * public API; this file dispatches and holds the verb table. */
#include <string.h>

#include "cli.h"

static int cmd_help(int argc, char **argv);

static const cli_verb cli_verbs[] = {
    {"check", cmd_check, "validate a case and summarise it",
     "kl check CASE [--json] [--tolerance [--seed N]]",
     "CASE is a case folder or its case.yaml. Prints the kernel, the params,\n"
     "every shape with its evaluated sizes and launch geometry, and exits 0;\n"
     "or prints every error as path:line:column: message and exits 2.\n"
     "\n"
     "  --json   one JSON document on stdout: {\"ok\": true, \"case\": {...}}\n"
     "           or {\"ok\": false, \"errors\": [...]}\n"
     "  --tolerance  also check the baseline against the oracle at every\n"
     "           shape (compiled and run: a device case needs a device) and\n"
     "           say whether the elementwise tolerance (reference.atol,\n"
     "           rtol) accepts a trivial output made from the oracle's:\n"
     "           zeros, each row's mean, the rows rolled by half, the\n"
     "           transpose (docs/integrity.md); exit 0 either way\n"
     "  --seed N     the checks' seeds derive from N (default: a fresh N,\n"
     "           printed with the result, so a probe can be repeated)\n"},
    {"new", cmd_new, "stamp a new case folder from a template",
     "kl new NAME [--template host|cuda|python|DIR] [--dir DIR] [--json]",
     "Creates DIR/NAME (DIR defaults to the current folder) from a template\n"
     "in kernlab's share folder; `kl check DIR/NAME` accepts it as is.\n"
     "Never overwrites: an existing folder is an error (exit 2).\n"
     "\n"
     "  --template T  host (default): a C kernel run on the CPU;\n"
     "                cuda: a CUDA kernel; python: a Python operator\n"
     "                (PyTorch, Triton...); or a path to a template folder\n"
     "  --dir DIR     where to create the case\n"
     "  --json        print {\"path\": ..., \"template\": ...}\n"},
    {"harness", cmd_harness, "write the generated harness of a case",
     "kl harness CASE [--candidate FILE] [--standalone | --plugin] [-o FILE]",
     "Writes the harness source (to stdout without -o): the KERNEL SECTION\n"
     "(the candidate verbatim, or the baseline) and the frozen HARNESS\n"
     "SECTION. The same case and kernel always give the same file.\n"
     "\n"
     "  --standalone  (default) one C file with main(): cc -O3 harness.c -lm\n"
     "                && ./a.out checks every shape on 3 seeds and prints\n"
     "                one JSON line per shape with simple timings\n"
     "  --plugin      the shared-object form kernlab's worker loads (ABI in\n"
     "                kernlab/plugin.h)\n"
     "  --candidate F a kernel to put in the KERNEL SECTION\n"},
    {"bench", cmd_bench, "check a kernel, then time it at every shape",
     "kl bench CASE [--candidate FILE] [--shape NAME] [--hot] "
     "[--launch stream|graph|both] [--seed N] [--json] [--json-events]",
     "Compiles (cached), checks the candidate (or the baseline) against the\n"
     "case's oracle on 3 fresh seeds per shape, and only then times it in\n"
     "the worker: cold caches by default, adaptive sampling until the 95%\n"
     "interval of the median is within 0.5% or the time cap is reached.\n"
     "On a GPU, CUPTI's kernel records less their fixed part, measured once\n"
     "per device and kept (KERNLAB_CALIBRATE=0: as the records read).\n"
     "Exit 3 when the candidate is rejected (INCORRECT, CRASHED, TIMEOUT,\n"
     "COMPILE_ERROR), with the reason.\n"
     "\n"
     "  --shape NAME      one shape only\n"
     "  --hot             no cache flush between samples\n"
     "  --launch MODE     stream: each sample launches as the kernel's\n"
     "                    launcher does; graph: replayed from a CUDA graph\n"
     "                    captured once, as a program under CUDA graphs runs\n"
     "                    it (no host launch overhead; cuda cases); both:\n"
     "                    each shape timed from the stream, which decides,\n"
     "                    then from a graph, reported beside it. Default:\n"
     "                    the case's timing.launch, else stream\n"
     "  --seed N          reproducible check seeds (default: fresh ones)\n"
     "  --time-cap-ms N   sampling time per shape (default 2000)\n"
     "  --timeout-ms N    limit per worker request (default 60000)\n"
     "  --device N        CUDA device within CUDA_VISIBLE_DEVICES (default:\n"
     "                    of several GPUs the idlest, by NVML; else 0)\n"
     "  --json            the report as one JSON document (docs/json.md)\n"
     "  --json-events     one JSON object a line on stderr while working:\n"
     "                    phase, shape, samples, verdict (docs/json.md)\n"},
    {"compare", cmd_compare, "decide whether a candidate beats the baseline",
     "kl compare CASE --candidate FILE [--shape NAME] [--hot] "
     "[--launch stream|graph|both] [--seed N] [--json] [--json-events]",
     "Checks the candidate like kl bench, then times baseline and candidate\n"
     "interleaved in one worker (A B, B A, B A, A B, ...: Thue-Morse order)\n"
     "and reports per shape the speedup (baseline time / candidate time)\n"
     "with its 95% interval and a decision: faster or slower when the\n"
     "interval excludes 1 and the gain reaches the case's min_gain_pct,\n"
     "else same; then the objective over the shapes. Options as for kl\n"
     "bench. Exit 3 when rejected.\n"},
    {"profile", cmd_profile, "read hardware counters and name the bottleneck",
     "kl profile CASE [--candidate FILE] [--shape NAME] "
     "[--set quick|standard|LIST] [--json] [--json-events] [--ncu-names]\n"
     "       kl profile --list-metrics [--json]",
     "Checks and times the kernel like kl bench (a short timing), then\n"
     "profiles one launch per shape: CUPTI's Range Profiler for CUDA cases\n"
     "(each pass starts from restored inputs and a flushed L2; durations\n"
     "always come from the timed, unprofiled launches), perf_event_open for\n"
     "host cases. Prints the bottleneck verdict (memory_bound, compute_bound,\n"
     "latency_bound, launch_bound) with the numbers behind it, then the\n"
     "metrics by group: roofline, memory, warp stalls, occupancy,\n"
     "instruction, launch.\n"
     "  --set S           quick (<= 3 passes), standard (default; >= 50\n"
     "                    metrics in <= 15 passes), or a comma list of\n"
     "                    catalog names and raw CUPTI names, checked\n"
     "                    against the chip (an unknown name: exit 2)\n"
     "  --ncu-names       key metrics by Nsight Compute's names\n"
     "  --list-metrics    print the metric catalog and exit\n"
     "  --json            one JSON document (docs/json.md)\n"
     "  --json-events     one JSON object a line on stderr while working\n"
     "Exit 1 when the GPU gives no counters (ERR_NVGPUCTRPERM, vGPU): the\n"
     "message says why and what to do; timing is still printed. Where the\n"
     "host has no perf counters (many VMs) a note says so (exit 0).\n"
     "Exit 3 when the candidate is rejected.\n"},
    {"rules", cmd_rules, "diagnose a kernel: rules over its metrics",
     "kl rules CASE [--candidate FILE] [--shape NAME] [--rules FILE]... "
     "[--json]\n"
     "       kl rules [CASE [--shape NAME]] --metrics FILE [--kernel NAME]\n"
     "                [--launch ID] [--rules FILE]... [--json]\n"
     "       kl rules --lint FILE...\n"
     "       kl rules --list [--json]",
     "Profiles the case like kl profile (standard set), or reads recorded\n"
     "metrics, and evaluates the rules: the defaults (share/kernlab/rules),\n"
     "the case's own (rules: in case.yaml) and --rules files, where a rule\n"
     "with an id already loaded replaces it. Prints per shape the verdict,\n"
     "each fired rule (most severe first) with its finding, action and\n"
     "skill, and the rules that could not be evaluated with what they miss.\n"
     "Exit 2 for bad rule files or metrics (every error as\n"
     "path:line:column: message), 1 when no metrics could be taken.\n"
     "\n"
     "  --metrics FILE  recorded metrics: the output of kl profile --json, a\n"
     "                  profile object, a flat {\"<metric>\": value, ...},\n"
     "                  Nsight Compute's ncu --csv --page raw (any units) or\n"
     "                  --page details (its rule results shown beside\n"
     "                  kernlab's), or an .ncu-rep (read by ncu --import);\n"
     "                  one diagnosis per kernel; no GPU needed. With CASE\n"
     "                  and --shape, an ncu export gets that shape's roofline\n"
     "  --kernel NAME   from --metrics, the kernels of that name only\n"
     "  --launch ID     from --metrics, ncu's launch (its ID column) only\n"
     "  --rules FILE    more rules (repeatable)\n"
     "  --skills DIR    more skills, <id>.md each (repeatable)\n"
     "  --shape NAME    one shape only\n"
     "  --lint FILE...  check rule files without metrics\n"
     "  --list          the loaded rules and the skill catalog\n"
     "  --json          {\"bottleneck\", \"verdict\", \"fired\": [...],\n"
     "                  \"not_evaluated\": [...], \"passed\": [...],\n"
     "                  \"ncu_advice\": [...]} for one profile; {\"shapes\":\n"
     "                  [...]} of those for several\n"},
    {"prompt", cmd_prompt, "print the prompt a model would get",
     "kl prompt CASE [--metrics FILE] [--best FILE] [--iteration N] "
     "[--rules FILE]... [--json]",
     "Prints exactly what would be sent to a language model: the system\n"
     "block (stable within a run, so providers can cache it: how to reply,\n"
     "the skill catalog, the skills that fired, patterns from other cases,\n"
     "this case's memory, the newest entries of its devlog.md) and the user\n"
     "block (program.md, the best kernel, signature and launch geometry per\n"
     "shape, the verdict, findings and actions, a metric table, times per\n"
     "shape, this run's attempts, Prior art from the knowledge base), then\n"
     "each section's size against its token budget. What does not fit is\n"
     "cut from its least important end and the prompt says so; the kernel\n"
     "is never cut.\n"
     "\n"
     "  --metrics FILE  profiles (kl profile --json) for the verdict,\n"
     "                  findings, fired skills, metrics and times\n"
     "  --best FILE     the current best kernel (default: the baseline)\n"
     "  --iteration N   the iteration the user block is for (default 1)\n"
     "  --rules FILE    more rules (repeatable), as for kl rules\n"
     "  --json          {\"system\", \"user\", \"sections\": [{\"name\",\n"
     "                  \"block\", \"chars\", \"tokens\", \"budget\",\n"
     "                  \"cut_chars\"}], \"tokens\"}\n"},
    {"run", cmd_run, "optimize a case: propose, check, measure, decide, record",
     "kl run CASE [--proposer llm|tune|replay|agent] [--strategy S] "
     "[--iterations N]"
     " [--patience N] [--max-wall S] [--max-worker-seconds S] [--max-usd D]"
     " [--resume RUN] [--replay RUN] [--seed N] [--hot] [--no-webhook] [--json]"
     " [--json-events]"
     " [--batch N] [--executor local|ssh|slurm] [--devices LIST]"
     " [--fresh-worker]"
     " [--host H] [--ssh-option O] [--remote-kl P] [--remote-dir D]"
     " [--partition P] [--gpus N] [--sbatch-option O] [--retries N]",
     "Iteration 0 checks, times, profiles and diagnoses the baseline; each\n"
     "later one takes a proposal, compiles it, checks it on the run's seeds\n"
     "(new each run; the kept worker makes the oracle's outputs once),\n"
     "compares it with the best so far (interleaved, one worker), applies the\n"
     "integrity gates and decides: ACCEPTED (the objective's 95% interval\n"
     "above 1 and at least the case's min_gain_pct), REJECTED, INCORRECT,\n"
     "CRASHED, TIMEOUT, COMPILE_ERROR, INVALID_REPLY or CHEAT (with the "
     "gate).\n"
     "The first budget reached stops the run. Records: runs/<run>/iter_NNN/,\n"
     "solutions.jsonl, benchmark.csv and memory.jsonl in the case folder,\n"
     "append-only. Ctrl-C stops after the current step. One run per case\n"
     "at a time: another kl run on it stops at once, naming the run that\n"
     "holds it (exit 1). Exit 2 for a bad case, options or run id; 1 when\n"
     "kernlab itself failed (records kept).\n"
     "\n"
     "  --proposer P     llm (needs llm.provider configured), tune (the\n"
     "                   tunables), replay (a recorded run), agent (an\n"
     "                   outside agent's kernels, handed over with kl\n"
     "                   propose, taken in order, waited for); default:\n"
     "                   llm when configured, else tune\n"
     "  --strategy S     tune: exhaustive, random or bandit (model-guided);\n"
     "                   default exhaustive up to 32 configurations\n"
     "  --iterations N   candidates (with --resume: the run's total)\n"
     "  --patience N     stop after N iterations without an acceptance\n"
     "  --max-wall S, --max-worker-seconds S, --max-usd D   budgets\n"
     "  --resume RUN     continue a run (killed or stopped), sampling as it\n"
     "                   did (--hot, --time-cap: run.json); asking it for\n"
     "                   another setting than that and the default is an\n"
     "                   error\n"
     "  --replay RUN     propose what RUN proposed, in order\n"
     "  --seed N         reproducible check seeds and random search\n"
     "  --rules FILE     more rules for the diagnoses (repeatable)\n"
     "  --profile SET, --no-profile   profiles of the baseline and of each\n"
     "                   acceptance (default: standard)\n"
     "  --time-cap MS    sampling cap per comparison and shape\n"
     "  --hot            no cache flush between samples (default: cold, as\n"
     "                   kl bench)\n"
     "  --timeout MS     per worker request (a hung candidate is TIMEOUT)\n"
     "  --no-webhook     send no notification even when one is configured\n"
     "                   (webhook: in the config or case, KL_WEBHOOK_URL);\n"
     "                   the summary's webhook_* fields say what happened\n"
     "  --json           only the summary: run, iterations, verdicts, best,\n"
     "                   best_speedup with its interval, stop_reason, budget\n"
     "  --json-events    one JSON object a line on stderr per step and per\n"
     "                   verdict (docs/json.md), instead of the live view\n"
     "\n"
     "Where candidates are evaluated (docs/executors.md; defaults from the\n"
     "config file's executor: section):\n"
     "  --batch N        proposals evaluated together, each against the\n"
     "                   best when the batch began (default: the executor's\n"
     "                   slots); the records depend on N, not on the GPUs\n"
     "  --executor K     local (default), ssh or slurm\n"
     "  --devices LIST   local: GPUs 0,1,... (default every visible one)\n"
     "  --fresh-worker   local: a new worker process for every evaluation\n"
     "                   (default: a GPU's worker is kept while candidates\n"
     "                   pass, ended after any that fails)\n"
     "  --host H         ssh: [user@]host, kernlab installed there\n"
     "  --ssh-option O   ssh: one more ssh argument (repeatable)\n"
     "  --remote-kl P    ssh, slurm: kl there (default kl; slurm: this kl)\n"
     "  --remote-dir D   ssh: batches there (.cache/kernlab/batches)\n"
     "  --partition P    slurm: the partition\n"
     "  --gpus N         slurm: --gres=gpu:N per job (0: none)\n"
     "  --sbatch-option O  slurm: one more sbatch argument (repeatable)\n"
     "  --retries N      ssh, slurm: tries after a dropped connection or a\n"
     "                   cancelled or failed job (default 3); past them the\n"
     "                   run stops (executor_error) and resumes\n"},
    {"propose", cmd_propose, "hand a kernel to a kl run --proposer agent",
     "kl propose CASE --candidate FILE [--memo TEXT] [--wait S] [--json]\n"
     "       kl propose CASE --verdict NAME [--wait S] [--json]\n"
     "       kl propose CASE --stop",
     "The outside agent's side of kl run CASE --proposer agent: the run\n"
     "takes the kernels put into the case's inbox (CASE/agent/inbox/), one\n"
     "per iteration in the order they came, waiting for the next; checks,\n"
     "measures, decides and records each like any proposal (solutions.jsonl,\n"
     "runs/RUN/iter_NNN/, memory.jsonl), within the run's budget. A kernel\n"
     "put before the run starts waits for it; a killed run resumed with\n"
     "--resume proposes again what it had taken (RUN/agent/).\n"
     "\n"
     "  --candidate FILE  put FILE into the inbox; prints its NAME there\n"
     "  --memo TEXT       one line saying what the kernel tries\n"
     "  --wait S          then wait up to S seconds for the run's verdict\n"
     "  --verdict NAME    the verdict recorded for NAME (--wait: wait)\n"
     "  --stop            no more kernels: the run ends (exhausted) when it\n"
     "                    asks for the next\n"
     "  --json            {\"name\", \"verdict\": null} when put; the\n"
     "                    verdict's record once decided (docs/json.md)\n"
     "Exit 0 when put or decided ACCEPTED or REJECTED, 3 when decided\n"
     "against the kernel (INCORRECT, CRASHED, ...), 1 when not decided\n"
     "within --wait, 2 for a bad case or arguments.\n"},
    {"evaluate", cmd_evaluate, "evaluate a batch an ssh or slurm executor sent",
     "kl evaluate DIR [--devices LIST]",
     "Runs every evaluation of the batch folder DIR that has no result yet,\n"
     "in parallel over the GPUs (--devices, default every visible one),\n"
     "writing DIR/results/ID.json as each finishes. The ssh and slurm\n"
     "executors of kl run call it where the GPUs are; one evaluate per\n"
     "folder at a time. Exit 2 for a folder that is not a batch, 1 when an\n"
     "evaluation could not be written.\n"},
    {"best", cmd_best, "write the best kernel recorded for a case",
     "kl best CASE [--dispatch] [-o FILE] [--json]",
     "The accepted candidate with the largest speedup against the baseline\n"
     "over every run, with its tunable settings written in as #defines.\n"
     "Without -o it goes to stdout; -o never overwrites a file. --json prints\n"
     "its solutions.jsonl record instead. Exit 2 when nothing was accepted.\n"
     "\n"
     "--dispatch: the best candidate for each shape instead, as one kernel\n"
     "section whose launcher (kernlab_launch) picks a variant by the shape's\n"
     "values. A shape keeps the baseline unless a candidate's speedup over\n"
     "it, chained through the recorded comparisons, has its interval above\n"
     "1 and the case's min_gain_pct; those numbers only choose: measure the\n"
     "dispatcher with kl compare CASE --candidate FILE (against the\n"
     "baseline) and write it into the program with kl export --kernel FILE.\n"
     "--json prints the evidence: per shape the variant, its run and\n"
     "iteration, speedup and interval.\n"},
    {"report", cmd_report, "a report of a run: curve, candidates, shapes",
     "kl report CASE [--run ID] [--format md|html] [-o FILE]",
     "Reads the case's records (nothing is re-measured) and writes one\n"
     "self-contained report of a run (default: the latest): the best-so-far\n"
     "curve against the baseline with its 95% band, every candidate by\n"
     "verdict, per shape the baseline and best times, the speedup with its\n"
     "interval, achieved bandwidth or FLOP/s and the share of the roofline\n"
     "(where a profile measured the peaks), the bottleneck and findings\n"
     "before and after, the budget spent (iterations, wall, worker seconds,\n"
     "tokens, dollars, cost per accepted 1%), and a link to each\n"
     "iteration's folder. HTML has inline SVG charts and fetches nothing.\n"
     "\n"
     "  --run ID        the run (kl history lists them)\n"
     "  --format F      md (default on stdout and for *.md) or html (default\n"
     "                  for other -o files)\n"
     "  -o FILE         write FILE (replaced whole); links are relative to\n"
     "                  its folder\n"
     "Exit 2 for a bad case or an unknown run; 1 when the records cannot be\n"
     "read.\n"},
    {"history", cmd_history, "list the runs of a case, its lineage, ledgers",
     "kl history CASE [--lineage | --attempts | --improvements] [--run ID] "
     "[--json]",
     "One line per run, oldest first: id, start, proposer, candidates,\n"
     "acceptances, best speedup against the baseline with its interval,\n"
     "worker seconds, and why it stopped ((no summary) when the run was "
     "killed\n"
     "before it could say).\n"
     "\n"
     "  --lineage       the tree of versions: each candidate under the "
     "version\n"
     "                  it was compared with, its verdict, speedups, diff "
     "size\n"
     "                  (+added -removed lines) and memo; across runs a "
     "run\n"
     "                  whose baseline is an earlier winner hangs under it\n"
     "  --attempts      the attempt ledger: every candidate, failures and\n"
     "                  their reasons included\n"
     "  --improvements  the optimization ledger: baselines and accepted\n"
     "                  versions only\n"
     "  --run ID        one run only (with a view)\n"
     "--json prints {\"case\", \"runs\": [...]}, or the view's document\n"
     "(docs/json.md). Exit 2 for a bad case, option or unknown run; 1 when\n"
     "the records cannot be read.\n"},
    {"knowledge", cmd_knowledge, "add to, search and show the knowledge base",
     "kl knowledge add CASE --from RUN/ITER [--to DIR] [--id ID] [--title T]\n"
     "                     [--operator OP] [--language L] [--json]\n"
     "       kl knowledge search [WORDS...] [--rule ID] [--operator OP]\n"
     "                     [--language L] [--card TEXT] [--kind K] "
     "[--case CASE] [--json]\n"
     "       kl knowledge show ID [--case CASE] [--json]\n"
     "       kl knowledge path [--case CASE]",
     "Findings that carry across cases, one markdown file each with a small\n"
     "front matter (docs/knowledge.md): knowledge/optimizations/*.md (what\n"
     "worked), anti-patterns/*.md (what failed), languages/*.md (notes).\n"
     "Searched in order: $KERNLAB_KNOWLEDGE (':'-separated), the nearest\n"
     "knowledge/ at or above the case's folder (or the current directory),\n"
     "the installed starter set; an id seen twice is the first one's.\n"
     "kl run's prompt shows the matching entries under \"Prior art\".\n"
     "\n"
     "  add       an entry from an iteration of the case's records: accepted\n"
     "            -> optimization, rejected -> anti-pattern, with its\n"
     "            evidence (case, shapes, speedup, card, run, iteration),\n"
     "            the rules that fired on its parent, its memo and diff;\n"
     "            written to --to DIR, else the first $KERNLAB_KNOWLEDGE\n"
     "            folder, else the project's knowledge/ (made beside the\n"
     "            case's folder when there is none); prints the new file\n"
     "  search    the entries where every WORD appears and every option\n"
     "            matches (--kind optimization, anti-pattern or language)\n"
     "  show      one entry's file\n"
     "  path      the folders searched, found or absent\n"
     "Exit 2 for bad input (an unknown iteration or id, a baseline, a\n"
     "front matter that does not read: path:line:column), 1 for I/O.\n"},
    {"webhook", cmd_webhook, "send a test notification to the webhook",
     "kl webhook test [CASE] [--url URL] [--format generic|discord|slack]",
     "Finds the webhook as kl run does (KL_WEBHOOK_URL and\n"
     "KL_WEBHOOK_FORMAT, else the case's webhook: section, else the user\n"
     "config file's), sends one test message and says what came back. The\n"
     "URL is never printed, only its scheme and host. Exit 0 when the\n"
     "receiver answered 2xx, 1 when it did not, 2 when none is configured.\n"
     "\n"
     "  --url URL       this webhook instead (mind your shell history)\n"
     "  --format F      generic (a JSON object), discord or slack\n"},
    {"observe", cmd_observe, "record what a real program launches",
     "kl observe [-o FILE] [--kernel REGEX] [--max-launches N] "
     "[--max-bytes N] [--source SRC] [--json] -- PROGRAM ARGS...\n"
     "       kl observe --show FILE [--kernel NAME] [--share F] [--top K] "
     "[--source SRC] [--json]",
     "Runs PROGRAM unmodified with kernlab's CUPTI injection library\n"
     "(CUDA_INJECTION64_PATH) and writes FILE (default observation.json):\n"
     "every launch of the matching kernels with grid, block, dynamic shared\n"
     "memory, the bytes of every argument (read with the kernel's parameter\n"
     "layout; device addresses marked, with their allocation's size) and\n"
     "the GPU duration, plus every kernel's total GPU time. Then prints the\n"
     "kernels by time and the representative configurations of the busiest\n"
     "one (or --kernel's): launches bucketed by geometry and scalars, wide\n"
     "buckets split fast/slow, the top K covering the target share (*).\n"
     "Exit 1 when the program failed (the file is still written) or\n"
     "nothing was recorded; 2 for bad arguments or a program not found.\n"
     "\n"
     "  --kernel REGEX    record only kernels whose name (mangled or\n"
     "                    demangled) matches (POSIX extended regex)\n"
     "  --max-launches N  launches recorded in full (default 100000); the\n"
     "  --max-bytes N     rest, and past 64 MiB of records, only counted\n"
     "  --share F         target share of the kernel's time (default 0.9)\n"
     "  --top K           at most K configurations (default 8)\n"
     "  --split R         split a bucket when p95/p25 > R (default 1.5)\n"
     "  --show FILE       summarise a recorded observation; run nothing\n"
     "  --source FILE     the kernels' source: scalars shown by their\n"
     "                    parameters' names and types (eps=1e-05f)\n"
     "  --json            the summary as JSON (docs/observe.md)\n"},
    {"case", cmd_case,
     "make a case from an observation or a KernelBench problem",
     "kl case from-observation FILE [--source FILE.cu|FILE.py] --entry NAME "
     "-o DIR "
     "[--define NAME[=V]]... [--type NAME=DTYPE]... [-I DIR]... [--share F] "
     "[--top K] [--split R]\n"
     "       kl case from-kernelbench PROBLEM.py -o DIR",
     "Writes DIR/case.yaml, kernel.cu (the source up to the entry's\n"
     "definition, without a main), the local headers it includes (\"x.h\",\n"
     "beside it as in the program) and program.md. Parameter types may be\n"
     "typedefs or using aliases (followed through the source and its local\n"
     "headers, #if branches picked as the preprocessor would with the\n"
     "program's --define (-D) macros, which also become the case's flags),\n"
     "or stated with --type floatX=f32. No parameter name is reserved.\n"
     "The CUDA libraries the program had loaded (FILE's \"libraries\":\n"
     "cuBLAS, cuDNN, ...) become target.libs; a program's include folder\n"
     "(-I DIR, CUTLASS's say) in which one of the source's #includes is\n"
     "found becomes target.include. The shapes are the\n"
     "entry's representative configurations from FILE: scalars and launch\n"
     "geometry exact, weights the launch counts, objective total_time.\n"
     "Buffer counts come from the observed allocations and roles from\n"
     "const: both marked 'confirm' in case.yaml. The case is loaded back\n"
     "and its launch geometry and scalars compared with the observation\n"
     "at every shape. Exit 2 when the signature disagrees with what was\n"
     "observed, or DIR exists.\n\n"
     "A Triton kernel a Python program called under kl observe becomes a\n"
     "python case (--source defaults to the file the observation names):\n"
     "kernel.py (the program without its top-level statements), the\n"
     "configurations kept (launches.json, ranked by GPU time), ops.py\n"
     "launching the kernel as the program did; tensors it wrote are\n"
     "inouts to confirm (docs/observe.md).\n\n"
     "from-kernelbench reads a KernelBench problem (class Model, get_inputs,\n"
     "get_init_inputs; read by python3's ast, not run) and writes DIR/\n"
     "problem.py (unchanged), ops.py (Model is the baseline and the oracle;\n"
     "models built after torch.manual_seed(42) as KernelBench does),\n"
     "case.yaml (a python case on cuda: Model.forward's inputs, its outputs,\n"
     "the module constants as the shape's values, tolerance 1e-2) and\n"
     "program.md. Candidates define class ModelNew (KernelBench's format)\n"
     "or forward. Then, where the problem runs (torch and a device), the\n"
     "tolerance is probed as kl check --tolerance does: whether 1e-2\n"
     "accepts a trivial output (zeros, each row's mean, ...) at the\n"
     "problem's shape; where it cannot run, a line says so. Exit 2 when the\n"
     "file is not such a problem (at its line and column) or DIR exists.\n"},
    {"serve-bench", cmd_serve_bench,
     "benchmark an OpenAI-compatible server (tokens/s, TTFT, ITL)",
     "kl serve-bench URL [--model M] [--chat] [--requests N] "
     "[--concurrency C] [--prompt-tokens P] [--max-tokens T] [--seed S] "
     "[--api-key-env NAME] [--timeout-ms MS] [--json]\n"
     "       [--prompts FILE] [--ready-timeout S] [--start -- SERVER "
     "ARGV...]",
     "Sends N streaming completions (default 32; --chat: chat completions)\n"
     "to URL (http://host:port, /v1 added when missing), C at a time\n"
     "(default 4), each a prompt of P words from a seeded generator\n"
     "(default 128; the same seed, the same prompts) asking for T tokens\n"
     "(default 128). Every chunk is timestamped as it arrives: output\n"
     "tokens per second and requests per second over the run, time to\n"
     "first token and inter-token latency (median, p90, p99). A request\n"
     "that fails is counted with its reason and the others still measured;\n"
     "exit 1 when any failed. The key, if the server wants one, is read\n"
     "from the environment variable --api-key-env names (docs/json.md).\n"
     "\n"
     "--prompts FILE sends the file's prompts (one a line, in order, again\n"
     "from the first when the requests outnumber them) instead of\n"
     "generated ones.\n"
     "--start -- SERVER ARGV... starts the server first (its output to\n"
     "stderr), waits until URL's port accepts a connection (--ready-timeout\n"
     "S, default 60; a server that exits first is an error), measures it and\n"
     "stops it: what a backend: serving case runs once per measurement.\n"},
    {"export", cmd_export, "write the best kernel back into the program",
     "kl export CASE --to FILE [--kernel FILE] [--verify CMD] [--observe CMD] "
     "[--speedup S[,LO,HI]] [--repeat N] [--cwd DIR] [--json]\n"
     "       kl export CASE --to FILE [--verify CMD] --measure CMD --metric "
     "NAME\n"
     "                [--better higher|lower] [--repeat N] [--cwd DIR] "
     "[--json]",
     "Backs FILE up (in CASE/exports/ID/), replaces the entry's definition\n"
     "in it (or the lines between // kl:begin and // kl:end) with the\n"
     "case's best kernel (kl best), runs --verify, and with --observe\n"
     "observes the program --repeat times (default 3) before and after:\n"
     "the change is kept only when the median GPU time of the entry in the\n"
     "program fell by at least the case's min_gain_pct; otherwise FILE is\n"
     "restored and rebuilt with --verify. Every step goes to\n"
     "CASE/export.jsonl. Commands are split into words ('' and \"\" quote)\n"
     "and run without a shell, in --cwd. Exit 0 kept, 3 rolled back,\n"
     "2 bad input (no best yet, no such FILE or entry).\n"
     "\n"
     "--kernel FILE exports that kernel section instead of the best (e.g. a\n"
     "dispatcher from kl best --dispatch). A section that owns its launch\n"
     "(kernlab_launch) goes in whole, after a definition of kl_launch_ctx and\n"
     "a context maker for the program, and each ENTRY<<<...>>>(args) after it\n"
     "becomes kernlab_launch(args, kl_export_ctx(stream)); before and after\n"
     "are then every kernel's GPU time in the program.\n"
     "\n"
     "Proof that it ran: after the change the observation must show the\n"
     "exported kernels launched where the entry was (the entry no more; a\n"
     "kernel that keeps the entry's name is renamed kl_export_NAME when\n"
     "FILE launches it), as often as the entry launched before. Otherwise\n"
     "the export is not engaged (result not_engaged) and FILE is restored.\n"
     "The forecast is printed beside the measurement: the case's speedup\n"
     "through the entry's share of the program's GPU time (Amdahl), against\n"
     "the program's measured change, each with its interval; a gap beyond\n"
     "both is said. The best's speedup comes from the records; for --kernel\n"
     "FILE give it with --speedup S[,LO,HI] (kl compare's geomean).\n"
     "\n"
     "--measure CMD instead of --observe: the program's own benchmark, run\n"
     "--repeat times before and after; it prints a JSON object last on\n"
     "stdout and --metric NAME (a dotted path: tokens_per_s, ttft_ms.median)\n"
     "must get better (--better higher, the default, or lower) by the case's\n"
     "min_gain_pct: a model server measured by kl serve-bench, say.\n"
     "\n"
     "  --timeout S  per command (default 600)\n"
     "  --json       print the export's result record\n"},
    {"mcp", cmd_mcp, "serve kernlab's tools to a coding agent (MCP, stdio)",
     "kl mcp",
     "A Model Context Protocol server on stdin and stdout (JSON-RPC 2.0, one\n"
     "message a line) for coding agents: tools check, new, harness, bench,\n"
     "compare, profile, rules, prompt, best, history, report, observe and\n"
     "the case makers. Each call runs the same kl verb with --json: the\n"
     "same sandbox, gates and records, its --json document as the result.\n"
     "A candidate may be given as source text (kept as\n"
     "CASE/candidates/mcp-<sha256>.<ext>). bench, compare and profile send\n"
     "progress; a cancelled call's processes are ended. Nothing but\n"
     "protocol messages goes to stdout. Exit 0 when the client closes the\n"
     "input (the calls it asked for are answered first), 1 when the output\n"
     "closes first. docs/mcp.md has the agents' configuration.\n"},
    {"help", cmd_help, "show help for kl or a verb", "kl help [VERB]", ""},
};
static const size_t cli_nverbs = sizeof(cli_verbs) / sizeof(cli_verbs[0]);

static int cmd_help(int argc, char **argv) {
  return cli_help(cli_verbs, cli_nverbs, argc, argv);
}

static const cli_verb *find_verb(const char *name) {
  for (size_t i = 0; i < cli_nverbs; i++)
    if (strcmp(cli_verbs[i].name, name) == 0) return &cli_verbs[i];
  return NULL;
}

int main(int argc, char **argv) {
  cli_set_verbs(cli_verbs, cli_nverbs);
  if (kl_version_number() != KL_VERSION_NUMBER) {
    cli_error("library version %s does not match kl %s", kl_version_string(),
              KL_VERSION);
    return EXIT_FAILED;
  }
  if (argc < 2) return cmd_help(1, argv);
  const char *verb = argv[1];
  if (strcmp(verb, "--version") == 0 || strcmp(verb, "-V") == 0) {
    printf("kl %s\n", kl_version_string());
    return EXIT_OK;
  }
  if (strcmp(verb, "--help") == 0 || strcmp(verb, "-h") == 0)
    return cmd_help(1, argv);
  const cli_verb *v = find_verb(verb);
  if (!v) {
    const char *best = NULL;
    size_t best_len = 0;
    /* A cheap "did you mean": the verb sharing the longest prefix. */
    for (size_t i = 0; i < cli_nverbs; i++) {
      size_t n = 0;
      while (verb[n] && verb[n] == cli_verbs[i].name[n])
        n++;
      if (n > best_len) {
        best_len = n;
        best = cli_verbs[i].name;
      }
    }
    if (best && best_len >= 2)
      cli_error("unknown command '%s'; did you mean '%s'? (see kl help)", verb,
                best);
    else
      cli_error("unknown command '%s' (see kl help)", verb);
    return EXIT_BAD_INPUT;
  }
  for (int i = 2; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      cli_help_verb(stdout, cli_verbs, cli_nverbs, v->name);
      return EXIT_OK;
    }
  return v->run(argc - 1, argv + 1);
}
