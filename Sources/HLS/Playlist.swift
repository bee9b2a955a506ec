/// A parsed playlist of either kind.
public enum Playlist: Sendable, Equatable {
    case media(MediaPlaylist)
    case master(MasterPlaylist)
}
