"""What the benchmark scripts share, one module per job.

Every benchmark measures docmem against a baseline in the same run, alternating
the two (A/B, then B/A, ...) so the noise of a shared machine hits both alike,
and reports the ratio of the medians against a target.

* :mod:`harness.timing`: clocks, the A/B interleaving, its medians and requests per call.
* :mod:`harness.arguments`: the command line (counts, endpoint, ``--json``).
* :mod:`harness.workload`: the docmem side (seeded memories, timed saves and recalls).
* :mod:`harness.contention`: many writers saving to one scope, and the check afterwards.
* :mod:`harness.s3`: the S3 endpoint, fresh prefixes and their clean-up, request counting.
* :mod:`harness.azure`, :mod:`harness.gcs`: the same request counting, on the Azure SDK's
  and google-cloud-storage's clients.
* :mod:`harness.report`: a result row, the table, the JSON report, both printed (``emit``).
* :mod:`harness.frameworks`: each agent framework driven through its real loop and
  offline model, with docmem's adapter and with the same hook doing nothing: one
  model call (``adapters.py``), or a whole scripted conversation whose requests
  are recorded (``prompt_cache.py``).

:mod:`harness.s3` imports boto3, botocore and docmem_s3 only when called, so
``local.py`` needs docmem alone.
"""
