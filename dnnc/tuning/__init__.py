"""Tools over tuning specs that build and measure programs: ``tune`` times the
alternatives at each decision site and writes records; ``legality`` checks that what
a spec decides for a model can be carried out (its graphs build, its configs compile).
They sit above the pipeline and the partitioner, which read specs (``dnnc.specs``)."""
