"""locate_report.json and locate_report.md: the chain of rounds and the verdict."""
import json
import os


def write_reports(out, report):
    with open(os.path.join(out, "locate_report.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    with open(os.path.join(out, "locate_report.md"), "w", encoding="utf-8") as f:
        f.write(render_markdown(report))


def render_markdown(report):
    lines = ["# numprobe locate", "", f"**Verdict:** {report['verdict']}", "",
             f"- golden: `{report['golden']}`", f"- target: `{report['target']}`",
             f"- steps: {report['steps']}; status: {report['status']}; "
             f"total {report['seconds']:.1f} s; {report['bytes_written']:,} bytes written", ""]
    for r in report["rounds"]:
        lines += [f"## Round {r['round']}: {r['title']} ({r['seconds']:.1f} s)", ""]
        for run in r["runs"]:
            lines.append(f"- {run['side']} run ({run['seconds']:.1f} s): `{run['command']}` with "
                         f"`NUMPROBE_CONFIG={run['config_path']}` (task {run['config']['task']}, "
                         f"level {run['config']['level']}"
                         + _filters(run["config"]) + f") → `{run['dump']}`")
        if r.get("summary"):
            for p in r["summary"]["pairs"]:
                lines.append(f"- compare step {p['step']} rank {p['rank']}: {p['rows']} rows, "
                             f"{p['error']} error, {p['warning']} warning, coverage "
                             f"{p['coverage']}, regime {p['regime']}, first divergence "
                             f"`{p['first_divergence']}`")
            for o in [o for o in r["summary"]["origins"] if o["rank"] is not None]:
                lines.append(f"- origin across ranks (step {o['step']}): rank {o['rank']}, "
                             f"`{o['entry']}` ({o['reason']}), received by {o['received_by']}")
        for key in ("environment_differences", "structural_differences"):
            if key in r:
                lines.append(f"- {key.replace('_', ' ')}: "
                             + ("none" if not r[key] else ""))
                for d in r[key]:
                    lines.append(f"  - `{json.dumps(d)}`")
        if "reproducibility" in r:
            rep = r["reproducibility"]
            lines.append("- golden run twice: " + ("reproducible" if rep["reproducible"] else
                         f"NOT reproducible, first divergence "
                         f"`{rep['first_divergence']['entry']}`"))
        if r.get("finding"):
            lines.append(f"- finding: `{json.dumps(r['finding'])}`")
        if r.get("tensor_evidence"):
            ev = r["tensor_evidence"]
            for row in ev["rows"]:
                lines.append(f"  - `{json.dumps(row)}`")
            if ev.get("largest_difference"):
                lines.append(f"- largest difference: `{json.dumps(ev['largest_difference'])}`")
        if r.get("next"):
            lines.append(f"- next: {r['next']}")
        lines.append("")
    if report.get("failure"):
        fail = report["failure"]
        lines += ["## Failure", "", f"{fail['message']} (log: `{fail['log']}`)", "", "```",
                  fail["tail"].rstrip(), "```", ""]
    return "\n".join(lines)


def _filters(cfg):
    section = cfg.get(cfg["task"], {})
    parts = []
    if section.get("scope"):
        parts.append(f", scope {section['scope']}")
    if section.get("list"):
        parts.append(f", list {section['list']}")
    if cfg.get("rank"):
        parts.append(f", rank {cfg['rank']}")
    return "".join(parts)


def bytes_under(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total
