/*
 * playlist.h - playlists (SPEC 6): what a queue is. Pure: no I/O.
 */
#ifndef CC_GAME_PLAYLIST_H
#define CC_GAME_PLAYLIST_H

#define CC_PLAYLIST_NAME_MAX 32                   /* bytes of a playlist name */
#define CC_PLAYLIST_BUF (CC_PLAYLIST_NAME_MAX + 1) /* a buffer that holds any playlist name */

#endif
