-- 007: the proof-of-work challenge an event may put before its orders (issue 31 item 3),
-- given at creation as "challenge": {"kind": "pow", "difficulty": N} (order/README.md).
-- N: the leading zero bits of SHA-256 a buyer's solution needs; -1: {"kind": "path"}, a
-- hidden order path per user instead; NULL: neither.
-- Kept here so that a gate rebuilt after a lost Redis (event_reload.lua) keeps it.
ALTER TABLE seckill_event ADD COLUMN IF NOT EXISTS challenge_bits int
    CHECK (challenge_bits = -1 OR challenge_bits BETWEEN 1 AND 32);
