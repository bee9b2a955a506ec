import Filters
import MediaIO
