"""The reference SIMT emulator: the golden model every other engine is compared against."""
