"""Reads an Nsight Compute SASS source page (ncu --page source --csv --print-source=sass): one dict
per instruction, in code order, with its SASS text ("source"), how often it executed
("executed", warp-level), its warp-state samples ("samples") and the samples per stall reason
("stalls", by the reason's name without the "stall_" prefix). Shared by summarize_chain_stalls.py
and summarize_dsa_stalls.py."""
import csv


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def load(path):
    rows = [r for r in csv.reader(open(path)) if r]
    start = next(i for i, r in enumerate(rows) if "Instructions Executed" in r)
    header, data = rows[start], rows[start + 1:]
    at = {name: i for i, name in enumerate(header)}
    reasons = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
    return [{"executed": int(number(r[at["Instructions Executed"]])),
             "samples": number(r[at["Warp Stall Sampling (All Samples)"]]),
             "source": r[at["Source"]].strip(),
             "stalls": {h[len("stall_"):]: number(r[at[h]]) for h in reasons}} for r in data]
