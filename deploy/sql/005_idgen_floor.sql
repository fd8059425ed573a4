-- 005: libidgen's floor mode (issue 35, idgen/README.md "Floor mode"). One row per id
-- prefix and UTC day: `floor` is at or above every number of that day's counter any
-- process may hand out (written ahead of the leases, GREATEST only, never lowered), so a
-- Redis that lost icr:<prefix>:<yyyymmdd> restores it there instead of at 1; `epoch`
-- counts those restores (each one a new epoch, so a lease a restore overtook is seen).
CREATE TABLE IF NOT EXISTS idgen_floor (
    prefix text NOT NULL,
    day date NOT NULL,
    floor bigint NOT NULL DEFAULT 0 CHECK (floor >= 0),
    epoch int NOT NULL DEFAULT 0 CHECK (epoch >= 0),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (prefix, day)
);
