"""dnnc's intermediate representation: dialects over xDSL, types, text I/O, programs."""
