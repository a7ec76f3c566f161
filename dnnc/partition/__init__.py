"""The partitioner: which backend runs which ops, priced for the whole graph.

* ``candidates``: overlapping candidate groups per backend;
* ``cost``: the roofline estimate over the GPU's measured peaks;
* ``extract`` / ``measure``: a candidate alone as a program, lowered and timed;
* ``pricing``: estimate, check, measure, calibrate;
* ``cover``: the cheapest acyclic cover (shortest path over covered sets);
* ``spec_facts`` / ``spec_apply``: what a tuning spec matches at each site, and the
  records in force deciding sites before the cost model;
* ``partitioner``: the ``partition`` pass and its decision record;
* ``explain``: the record as a table.
"""

DECISIONS_ATTR = "dnnc.decisions"
"""Function attribute (JSON) where ``partition`` leaves its decision record; the pipeline
moves it into ``Program.metadata["decisions"]``."""
