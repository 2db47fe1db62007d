-- slice_options.sql as stored once per store version (the derived table slice_choices,
-- queries/derived.py): the sidebar on every page asks for it, and the answer does not depend
-- on the slice.
SELECT column_name, value, runs
FROM slice_choices
ORDER BY column_name, value
