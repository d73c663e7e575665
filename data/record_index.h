// The index of a folder of tar shards in WebDataset's layout (data.source = "shards"), or of
// TFRecord files (data.source = "tfrecord", below).
//
// Shards: ROOT's
// *.tar files in file-name order, each holding samples as consecutive members that share a key
// (the member's path up to the first dot of its file name): the image, <key>.jpg or another
// image extension, and <key>.cls, the class index as decimal text. Other members (.json, .txt)
// are ignored. ROOT/classes.txt, where present, names the classes one per line (what
// `ringtrain pack` writes); without it the classes are "0" to the largest label.
//
// Indexing reads each shard's headers and labels once; the index (each sample's shard, offset
// and size) is cached in ROOT/.ringtrain_shards.tsv, as a folder's file list is, and reused while
// every shard and classes.txt keep their sizes and modification times. A sample that cannot be
// indexed (no label, a label that is not a class, no image, a truncated shard's tail) is left
// out and named in ImageIndex::left_out, for the caller to warn about or refuse
// (data.on_bad_file).
//
// TFRecords: every file of ROOT but classes.txt and *.idx, in file-name order, each a sequence of
// tf.Example records (data/tf_example.h). Indexing reads each record's 12-byte header (as DALI's
// tfrecord2idx does), so the labels are read with the images; the index is cached in
// ROOT/.ringtrain_tfrecords.tsv. Samples are named "FILE:offset N".
#pragma once

#include <cstdint>
#include <string>

#include "data/image_folder.h"

namespace rt {

// `source`: which record format ROOT holds (data.source: shards or tfrecord).
// Scans root (no cache). rt::Error naming root where it holds no record files.
ImageIndex scan_record_files(const std::string& root, DataSource source);
// The index from cache_path ("" = ROOT/.ringtrain_shards.tsv or .ringtrain_tfrecords.tsv) when
// that still matches the files, else scanned and written there atomically (Note [One index at a
// time] in data/index_cache.cpp).
ImageIndex load_record_index(const std::string& root, DataSource source, std::string cache_path = "",
                             bool rebuild = false);
// The index as text, as the cache holds it, and back (what rank 0 hands the other ranks).
std::string record_index_text(const ImageIndex& index);
ImageIndex record_index_from_text(const std::string& root, const std::string& text);
// Moves the samples whose label is num_classes or more to left_out, naming each (without a
// classes.txt, labels are checked against the model's classes); TFRecords without a classes.txt
// get num_classes numbered classes (their labels are checked as they are read).
void leave_out_labels_from(ImageIndex& index, int64_t num_classes);

}  // namespace rt
