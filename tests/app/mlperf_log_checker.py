#!/usr/bin/env python3
"""MLPerf's log rules for a closed ResNet-50 run, written here from the rules of mlcommons/logging's
training 4.0.0 compliance checker (common.yaml, closed_common.yaml, closed_resnet.yaml,
closed_resnet_lars.yaml and closed_resnet_sgd.yaml) and from how its reference-convergence-point
checker reads a run. Usage: mlperf_log_checker.py LOG

Prints one line per broken rule and exits 1 if any; then the RCP checker's reading of the run:
"rcp: converged at epoch N" (run_stop's status is "success"; N is the epoch_num of the last
eval_accuracy before run_stop) or "rcp: not converged".

How the checker applies the rules, as this file does: each rule file goes over every line with a
state of its own; a key's checks run on every line holding it (a submission_ key's on its first
only); EXACTLY_ONE fails on none or on several that differ (several equal ones only warn);
AT_LEAST_ONE_OR(k) is met by either key; an ATLEAST_ONE check must hold on one line at least.
"""
import json
import math
import sys

TOKEN = ":::MLLOG "


def parse(path):
    lines, errors = [], []
    with open(path) as f:
        for n, text in enumerate(f, 1):
            if TOKEN not in text:
                continue
            body = text[text.rindex(TOKEN) + len(TOKEN):].strip()
            try:
                m = json.loads(body)
                lines.append({"time": float(m["time_ms"]), "key": m["key"], "value": m["value"],
                              "meta": m["metadata"], "n": n})
            except (ValueError, KeyError, TypeError) as e:
                errors.append(f"line {n}: not an MLLOG record ({e!r})")
    return lines, errors


def is_integer(x):
    return abs(round(x) - x) < 0.00001


def has(meta, *names):
    return any(k in meta for k in names)


# Each rule: key -> (requirement, [(description, check(v, meta, state, line))], post(v, state, line)).
# The BEGIN state and the rules of common.yaml.
def common_rules():
    def post_division(v, s, ll):
        s["compile_time_mins"] = 240 if v == "open" else 30
        s["then"].append("closed_common" if v == "closed" else "open")

    def post_init_start(v, s, ll):
        s["init_started"] = True
        s["first_init_start"] = min(s["first_init_start"], ll["time"])

    return {
        "submission_org": ("EXACTLY_ONE", [("is not empty", lambda v, m, s, ll: v != "")], None),
        "submission_platform": ("EXACTLY_ONE", [("is not empty", lambda v, m, s, ll: v != "")], None),
        "submission_division": ("EXACTLY_ONE", [("is closed or open", lambda v, m, s, ll: v in ("closed", "open"))],
                                post_division),
        "submission_status": ("EXACTLY_ONE", [("is cloud, onprem, preview or research",
                                               lambda v, m, s, ll: v in ("cloud", "onprem", "preview", "research"))],
                              None),
        "cache_clear": ("AT_LEAST_ONE", [], None),
        "init_start": ("AT_LEAST_ONE", [("comes before init_stop", lambda v, m, s, ll: not s["init_stopped"]),
                                        ("comes before run_start", lambda v, m, s, ll: not s["run_started"])],
                       post_init_start),
        "init_stop": ("EXACTLY_ONE", [
            ("follows init_start", lambda v, m, s, ll: s["init_started"]),
            ("comes before run_start", lambda v, m, s, ll: not s["run_started"]),
            ("ends initialisation within the division's limit",
             lambda v, m, s, ll: ll["time"] - s["first_init_start"] < s["compile_time_mins"] * 60 * 1e3)],
            lambda v, s, ll: s.update(init_stopped=True)),
        "run_start": ("EXACTLY_ONE", [("follows init_stop", lambda v, m, s, ll: s["init_stopped"])],
                      lambda v, s, ll: s.update(run_started=True)),
        "run_stop": ("EXACTLY_ONE", [("follows run_start", lambda v, m, s, ll: s["run_started"]),
                                     ("has a status", lambda v, m, s, ll: "status" in m)],
                     lambda v, s, ll: s.update(run_stopped=True)),
        "block_start": ("AT_LEAST_ONE_OR(epoch_start)", [
            ("follows run_start", lambda v, m, s, ll: s["run_started"]),
            ("has epoch_count or samples_count", lambda v, m, s, ll: has(m, "epoch_count", "samples_count")),
            ("has first_epoch_num with epoch_count", lambda v, m, s, ll: "first_epoch_num" in m or "epoch_count" not in m),
            ("has epoch_count > 0", lambda v, m, s, ll: m["epoch_count"] > 0 if "epoch_count" in m else True),
            ("has samples_count >= 0", lambda v, m, s, ll: m["samples_count"] >= 0 if "samples_count" in m else True)],
            None),
        "block_stop": ("AT_LEAST_ONE_OR(epoch_stop)",
                       [("has first_epoch_num or samples_count", lambda v, m, s, ll: has(m, "first_epoch_num", "samples_count"))],
                       None),
        "epoch_start": ("AT_LEAST_ONE_OR(block_start)", [("has epoch_num", lambda v, m, s, ll: "epoch_num" in m)], None),
        "epoch_stop": ("AT_LEAST_ONE_OR(block_stop)", [("has epoch_num", lambda v, m, s, ll: "epoch_num" in m)], None),
        "eval_start": ("AT_LEAST_ONE_OR(block_start)",
                       [("has epoch_num or samples_count", lambda v, m, s, ll: has(m, "epoch_num", "samples_count"))], None),
        "eval_stop": ("AT_LEAST_ONE_OR(block_stop)",
                      [("has epoch_num or samples_count", lambda v, m, s, ll: has(m, "epoch_num", "samples_count"))], None),
        "eval_accuracy": ("AT_LEAST_ONE",
                          [("has epoch_num or samples_count", lambda v, m, s, ll: has(m, "epoch_num", "samples_count"))],
                          None),
        "train_samples": ("EXACTLY_ONE", [("is not empty", lambda v, m, s, ll: v != "")], None),
        "eval_samples": ("EXACTLY_ONE", [("is not empty", lambda v, m, s, ll: v != "")], None),
    }


def closed_common_rules():
    benchmarks = ("resnet", "ssd", "stable_diffusion", "maskrcnn", "gpt3", "dlrm_dcnv2", "bert", "rnnt", "unet3d", "gnn",
                  "llama2_70b_lora")
    return {
        "submission_benchmark": ("EXACTLY_ONE", [("names a benchmark", lambda v, m, s, ll: v in benchmarks)],
                                 lambda v, s, ll: s["then"].append("closed_" + v)),
        "gradient_accumulation_steps": ("EXACTLY_ONE", [("is > 0", lambda v, m, s, ll: v > 0)], None),
    }


def closed_resnet_rules():
    return {
        "global_batch_size": ("EXACTLY_ONE", [("is > 0", lambda v, m, s, ll: v > 0)], None),
        "opt_name": ("EXACTLY_ONE", [("is sgd or lars", lambda v, m, s, ll: v in ("sgd", "lars"))],
                     lambda v, s, ll: s["then"].append("closed_resnet_" + v)),
        "eval_accuracy": ("AT_LEAST_ONE", [("has epoch_num", lambda v, m, s, ll: "epoch_num" in m)], None,
                          ("one reaches the target 0.759 (and is below 1)", lambda v: 0.759 <= v < 1.0)),
    }


def decay_rule(v, m, s, ll):
    return is_integer(math.log2(v / 0.0001))


def closed_resnet_lars_rules():
    return {
        "lars_opt_base_learning_rate": ("EXACTLY_ONE", [], None),
        "lars_opt_end_learning_rate": ("EXACTLY_ONE", [("is 0.0001", lambda v, m, s, ll: v == 0.0001)], None),
        "lars_opt_learning_rate_decay_poly_power": ("EXACTLY_ONE", [("is 2", lambda v, m, s, ll: v == 2)], None),
        "lars_opt_learning_rate_decay_steps": ("EXACTLY_ONE", [], None),
        "lars_epsilon": ("EXACTLY_ONE", [("is 0", lambda v, m, s, ll: v == 0.0)], None),
        "lars_opt_learning_rate_warmup_epochs": ("EXACTLY_ONE", [], None),
        "lars_opt_momentum": ("EXACTLY_ONE", [], None),
        "lars_opt_weight_decay": ("EXACTLY_ONE", [("is 0.0001 x 2^k", decay_rule)], None),
    }


def closed_resnet_sgd_rules():
    return {
        "sgd_opt_base_learning_rate": ("EXACTLY_ONE", [("is a multiple of 0.001", lambda v, m, s, ll: is_integer(v / 0.001))],
                                       None),
        "sgd_opt_end_learning_rate": ("EXACTLY_ONE", [("is 0.0001", lambda v, m, s, ll: v == 0.0001)], None),
        "sgd_opt_learning_rate_decay_poly_power": ("EXACTLY_ONE", [], None),
        "sgd_opt_learning_rate_decay_steps": ("EXACTLY_ONE", [], None),
        "sgd_opt_weight_decay": ("EXACTLY_ONE", [("is 0.0001 x 2^k", decay_rule)], None),
        "sgd_opt_momentum": ("EXACTLY_ONE", [], None),
        "model_bn_span": ("EXACTLY_ONE", [], None),
        "opt_learning_rate_warmup_epochs": ("EXACTLY_ONE", [], None),
    }


FILES = {"common": common_rules, "closed_common": closed_common_rules, "closed_resnet": closed_resnet_rules,
         "closed_resnet_lars": closed_resnet_lars_rules, "closed_resnet_sgd": closed_resnet_sgd_rules}


def check_file(name, rules, lines, errors, warnings):
    s = {"init_started": False, "init_stopped": False, "run_started": False, "run_stopped": False,
         "first_init_start": 9e99, "compile_time_mins": 0, "then": []}
    seen, values, atleast = {}, {}, {}
    for ll in lines:
        rule = rules.get(ll["key"])
        if rule is None:
            continue  # keys a file does not list are allowed
        key = ll["key"]
        seen[key] = seen.get(key, 0) + 1
        values.setdefault(key, []).append(json.dumps(ll["value"]))
        if "submission_" in key and seen[key] > 1:
            continue
        _, checks, post = rule[:3]
        for what, check in checks:
            try:
                ok = check(ll["value"], ll["meta"], s, ll)
            except Exception as e:  # a missing field fails the check, as the checker's does
                ok, what = False, f"{what} ({e!r})"
            if not ok:
                errors.append(f"{name}: line {ll['n']}: {key} = {json.dumps(ll['value'])} breaks: {what}")
        if len(rule) > 3:
            what, check = rule[3]
            atleast[key] = atleast.get(key, False) or check(ll["value"])
        if post:
            post(ll["value"], s, ll)
    for key, rule in rules.items():
        req = rule[0]
        if req == "EXACTLY_ONE":
            if seen.get(key, 0) == 0:
                errors.append(f"{name}: {key} is missing (exactly one required)")
            elif seen[key] > 1:
                (warnings if len(set(values[key])) == 1 else errors).append(
                    f"{name}: {key} appears {seen[key]} times" + ("" if len(set(values[key])) == 1 else " with different values"))
        elif req == "AT_LEAST_ONE" and seen.get(key, 0) == 0:
            errors.append(f"{name}: {key} is missing (at least one required)")
        elif req.startswith("AT_LEAST_ONE_OR("):
            other = req[len("AT_LEAST_ONE_OR("):-1]
            if seen.get(key, 0) == 0 and not any(ll["key"] == other for ll in lines):
                errors.append(f"{name}: neither {key} nor {other} appears")
        if len(rule) > 3 and seen.get(key, 0) > 0 and not atleast.get(key):
            errors.append(f"{name}: no {key} where {rule[3][0]}")
    return s["then"]


def rcp_reading(lines):
    """The reference-convergence-point checker's reading: epochs from the last eval_accuracy before
    run_stop, converged only where run_stop says success."""
    epoch, status = None, None
    for ll in lines:
        if ll["key"] == "eval_accuracy":
            epoch = round(ll["meta"]["epoch_num"], 3) if "epoch_num" in ll["meta"] else None
        elif ll["key"] == "run_stop":
            status = ll["meta"].get("status")
            break
    return (epoch if status == "success" else None), status


def main(path):
    lines, errors = parse(path)
    warnings = []
    queue = ["common"]
    while queue:
        name = queue.pop(0)
        if name not in FILES:
            errors.append(f"{name}.yaml: no such rule file for this log")
            continue
        queue += check_file(name, FILES[name](), lines, errors, warnings)
    for w in warnings:
        print("warning:", w)
    for e in errors:
        print("error:", e)
    epoch, status = rcp_reading(lines)
    print(f"rcp: converged at epoch {epoch}" if epoch is not None else f"rcp: not converged (run_stop status {status})")
    print("compliance:", "refused" if errors else "accepted")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
