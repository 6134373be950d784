"""One screen per module; each has its stylesheet beside it."""
