"""Reading Nsight Compute reports: the only package that imports `ncu_report`.

Everything downstream (findings, writeup, diff, the report and export commands) reads reports
through the typed `KernelProfile` built here.
"""
