"""What a run did, for a person: break codes, the per-call log, the report page, the timeline.

The folder is the pipeline: ``codes`` (why a statement, a call or a function ran in Python:
one registry of stable codes), ``events`` (a bounded log of what each call did, kept only
while a report or a trace is asked for), ``model`` (what a page shows of each function,
read from ``janus.stats``/``janus.explain`` and the log), ``html`` (the page),
``chrome_trace`` (the timeline in Chrome's trace-event JSON), ``profile_page`` (the page of
what ``janus-profile`` saw).  Importing this package imports no TensorFlow: the converter
reads ``codes``.
"""
