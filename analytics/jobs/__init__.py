"""The report jobs: plain PySpark (and psycopg on the driver), no Django, so they run under spark-submit anywhere.

`main.py` is the entry point; `reports.py` says what every figure counts.
"""
