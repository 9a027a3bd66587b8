-- tests/bench/matcher_seed.sql: SQL helpers of the matcher benchmarks
-- (scripts/bench-matcher.sh loads this into the harness database; never a
-- migration). They seed QUEUED tickets with a realistic mix, fast and
-- deterministically, and tests/bench/matcher_claim.pgbench recomputes the
-- same ids, builds and regions from the slot numbers, so the two agree.
--
-- Slot s of a tag gets ticket md5(tag || '-t' || s)::uuid and player
-- md5(tag || '-p' || s)::uuid: random-looking like v4 UUIDs (the claim's
-- lock order and the primary key see no sequential ids), yet computable.
-- Attributes come from a key k: k = s for a mixed queue, k = s / 6 for a
-- grouped one (every 6 consecutive slots share build and home region, so
-- each group is a claimable 3v3).
--   home region  (k * 7) % 10: 0-3 eu-west, 4-6 us-east, 7-8 us-west, 9 ap-southeast
--   build        (k * 37) % 100: < 85 "1.4.2", < 97 "1.4.1" (protocol 7), else "1.5.0-rc1" (8)
--   RTT          to every region, uniform in a band by (home, region): home
--                20-60 ms, neighbours 60-120 (some within the 100 ms limit),
--                far 120-250 (cc_bench_rtt_lo/hi; tests/bench/queue_sim.c
--                uses the same bands)
--   rating       N(1500, 300) clamped to [100, 2900]; deviation 60-200
--   queued_at    t0 + s ms (so later slots queue later), expires in an hour

CREATE OR REPLACE FUNCTION cc_bench_home(k bigint) RETURNS int
LANGUAGE sql IMMUTABLE AS $$
	SELECT (ARRAY[0, 0, 0, 0, 1, 1, 1, 2, 2, 3])[(k * 7) % 10 + 1]
$$;

CREATE OR REPLACE FUNCTION cc_bench_build(k bigint) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN (k * 37) % 100 < 85 THEN '1.4.2' WHEN (k * 37) % 100 < 97 THEN '1.4.1' ELSE '1.5.0-rc1' END
$$;

CREATE OR REPLACE FUNCTION cc_bench_protocol(k bigint) RETURNS int
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN (k * 37) % 100 < 97 THEN 7 ELSE 8 END
$$;

CREATE OR REPLACE FUNCTION cc_bench_region(k bigint) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT (ARRAY['eu-west', 'us-east', 'us-west', 'ap-southeast'])[cc_bench_home(k) + 1]
$$;

-- The RTT bands in ms, lo and hi, from home region h (row) to region r
-- (column), flattened: element h * 4 + r + 1.
CREATE OR REPLACE FUNCTION cc_bench_rtt_lo() RETURNS float8[]
LANGUAGE sql IMMUTABLE AS $$
	--           eu-west  us-east  us-west  ap-southeast   (to)
	SELECT ARRAY[  20,       80,     140,      160,     -- from eu-west
		       80,       20,      60,      180,     -- from us-east
		      140,       60,      20,      120,     -- from us-west
		      160,      180,     120,       20]::float8[] -- from ap-southeast
$$;
CREATE OR REPLACE FUNCTION cc_bench_rtt_hi() RETURNS float8[]
LANGUAGE sql IMMUTABLE AS $$
	SELECT ARRAY[  60,      120,     190,      250,
		      120,       60,      90,      250,
		      190,       90,      60,      170,
		      250,      250,     170,       60]::float8[]
$$;

-- Seeds n QUEUED tickets of playlist pl, slots first .. first + n - 1.
-- The RTT draws are inline (a function call per draw would double the time).
CREATE OR REPLACE FUNCTION cc_bench_seed(tag text, pl text, first bigint, n bigint, grouped bool, t0 timestamptz)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	lo float8[] := cc_bench_rtt_lo();
	hi float8[] := cc_bench_rtt_hi();
BEGIN
	PERFORM setseed(((first % 997) / 997.0)::float8);
	INSERT INTO players (id)
	SELECT md5(tag || '-p' || s)::uuid FROM generate_series(first, first + n - 1) AS s;
	INSERT INTO tickets (id, player_id, playlist, state, build, protocol_version, rating, deviation,
			     predicted_rtt, queued_at, expires_at)
	SELECT md5(tag || '-t' || s)::uuid, md5(tag || '-p' || s)::uuid, pl, 'QUEUED',
	       cc_bench_build(k), cc_bench_protocol(k),
	       greatest(100, least(2900, 1500 + 300 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))),
	       60 + random() * 140,
	       jsonb_build_object(
		'eu-west', round((lo[h * 4 + 1] + random() * (hi[h * 4 + 1] - lo[h * 4 + 1]))::numeric, 1),
		'us-east', round((lo[h * 4 + 2] + random() * (hi[h * 4 + 2] - lo[h * 4 + 2]))::numeric, 1),
		'us-west', round((lo[h * 4 + 3] + random() * (hi[h * 4 + 3] - lo[h * 4 + 3]))::numeric, 1),
		'ap-southeast', round((lo[h * 4 + 4] + random() * (hi[h * 4 + 4] - lo[h * 4 + 4]))::numeric, 1)),
	       t0 + s * interval '1 millisecond', now() + interval '1 hour'
	FROM (SELECT s, k, cc_bench_home(k) AS h
	      FROM (SELECT s, CASE WHEN grouped THEN s / 6 ELSE s END AS k
		    FROM generate_series(first, first + n - 1) AS s) AS slots) AS keyed;
	RETURN n;
END
$$;

-- Empties everything the benchmarks write (the scratch database only).
CREATE OR REPLACE FUNCTION cc_bench_reset() RETURNS void
LANGUAGE sql AS $$
	TRUNCATE players, proposals, matches, outbox CASCADE
$$;
