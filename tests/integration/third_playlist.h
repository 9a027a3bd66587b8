/*
 * third_playlist.h - the third playlist of tests/integration/third_playlist.sh:
 * a 2v2 ranked "duo", written as a developer would add it to the list in
 * libcommon/game/playlist.c. The Makefile compiles that file once more
 * with this header forced in (-include), and links build/third-playlist/bin/
 * cc-matcher and cc-testkit-api from it plus the stock objects: nothing
 * else knows about "duo".
 */
#define CC_PLAYLISTS_TEST_ENTRIES                                                                      \
	{ .name = "duo",                                                                                \
	  .team_size = 2,                                                                               \
	  .ranked = true,                                                                               \
	  .tolerance_start = 50,                                                                        \
	  .tolerance_growth_per_s = 5,                                                                  \
	  .tolerance_cap = 600,                                                                         \
	  .arenas = CC_PLAYLIST_ARENAS_RANKED_ELIGIBLE },
