"""The launch every engine starts from (kernel, shapes, parameters, memory image)."""
