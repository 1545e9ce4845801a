-- KEYS[1] exact, KEYS[2] counts; ARGV[1] exact hash (16 hex), ARGV[2] url (after _exact.lua).
return first_of(KEYS[1], KEYS[2], ARGV[1], ARGV[2])
