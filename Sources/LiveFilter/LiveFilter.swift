// The library in one import: filters, media I/O types, the job API and sharded jobs.
@_exported import Filters
@_exported import MediaIO
@_exported import Pipeline
@_exported import HLS
@_exported import Shards
