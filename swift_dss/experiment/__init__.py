"""The evaluation of "Client-aware Cloud Storage" (section V) on the all-in-one cluster:
the caching study (Figs. 7-9) and the traffic-control study (Figs. 10-11).

`dss experiment caching|traffic --out DIR` writes DIR/summary.json and DIR/report.md
(docs/experiments.md describes the scaling and the device models).
"""
