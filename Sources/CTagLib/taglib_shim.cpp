// The only code that talks to TagLib (Debian's libtag1-dev): each container's own tag, by the keys
// players read. TagLib's C API cannot write these keys, hence this small C++ shim behind a C header.
#include "naviscan_taglib.h"

#include <taglib/apefile.h>
#include <taglib/apetag.h>
#include <taglib/fileref.h>
#include <taglib/flacfile.h>
#include <taglib/id3v2tag.h>
#include <taglib/mp4file.h>
#include <taglib/mp4tag.h>
#include <taglib/mpcfile.h>
#include <taglib/mpegfile.h>
#include <taglib/opusfile.h>
#include <taglib/speexfile.h>
#include <taglib/textidentificationframe.h>
#include <taglib/vorbisfile.h>
#include <taglib/wavpackfile.h>
#include <taglib/xiphcomment.h>

#include <cstdio>
#include <cstring>
#include <string>

using namespace TagLib;

namespace {

const char *const kFreeform = "----:com.apple.iTunes:";

void fail(char *error, size_t size, const std::string &message) {
    if (error && size > 0) std::snprintf(error, size, "%s", message.c_str());
}

String utf8(const char *text) { return String(text, String::UTF8); }

/// ID3v2 TXXX frames whose description is `key`, in any case (taggers differ: rsgain writes upper
/// case, foobar2000 lower; players match either).
ID3v2::FrameList userTextFrames(ID3v2::Tag *tag, const String &key) {
    ID3v2::FrameList found;
    for (auto *frame : tag->frameList("TXXX")) {
        auto *text = dynamic_cast<ID3v2::UserTextIdentificationFrame *>(frame);
        if (text && text->description().upper() == key.upper()) found.append(frame);
    }
    return found;
}

/// MP4 freeform atoms named ----:com.apple.iTunes:`key`, in any case.
StringList freeformNames(MP4::Tag *tag, const String &key) {
    StringList found;
    String wanted = (String(kFreeform) + key).upper();
    for (const auto &item : tag->itemMap()) {
        if (item.first.upper() == wanted) found.append(item.first);
    }
    return found;
}

/// The file and the tag its fields go in: an open file of a kind naviscan tags, else none.
struct Opened {
    FileRef ref;
    naviscan_tag_kind kind = NAVISCAN_TAG_NONE;
    ID3v2::Tag *id3 = nullptr;
    Ogg::XiphComment *xiph = nullptr;
    MP4::Tag *mp4 = nullptr;
    APE::Tag *ape = nullptr;

    Opened(const char *path, bool create) : ref(path, false) {
        File *file = ref.file();
        if (!file || !file->isValid()) return;
        if (auto *f = dynamic_cast<MPEG::File *>(file)) { id3 = f->ID3v2Tag(create); kind = NAVISCAN_TAG_ID3V2; }
        else if (auto *f = dynamic_cast<FLAC::File *>(file)) { xiph = f->xiphComment(create); kind = NAVISCAN_TAG_XIPH; }
        else if (auto *f = dynamic_cast<Ogg::Vorbis::File *>(file)) { xiph = f->tag(); kind = NAVISCAN_TAG_XIPH; }
        else if (auto *f = dynamic_cast<Ogg::Opus::File *>(file)) { xiph = f->tag(); kind = NAVISCAN_TAG_XIPH; }
        else if (auto *f = dynamic_cast<Ogg::Speex::File *>(file)) { xiph = f->tag(); kind = NAVISCAN_TAG_XIPH; }
        else if (auto *f = dynamic_cast<MP4::File *>(file)) { mp4 = f->tag(); kind = NAVISCAN_TAG_MP4; }
        else if (auto *f = dynamic_cast<WavPack::File *>(file)) { ape = f->APETag(create); kind = NAVISCAN_TAG_APE; }
        else if (auto *f = dynamic_cast<APE::File *>(file)) { ape = f->APETag(create); kind = NAVISCAN_TAG_APE; }
        else if (auto *f = dynamic_cast<MPC::File *>(file)) { ape = f->APETag(create); kind = NAVISCAN_TAG_APE; }
    }

    bool read(const std::string &key, std::string &value) const {
        if (id3) {
            if (key == "BPM" || key == "INITIALKEY") {
                const ID3v2::FrameList &frames = id3->frameListMap()[key == "BPM" ? "TBPM" : "TKEY"];
                if (frames.isEmpty()) return false;
                value = frames.front()->toString().to8Bit(true);
                return true;
            }
            ID3v2::FrameList frames = userTextFrames(id3, utf8(key.c_str()));
            if (frames.isEmpty()) return false;
            StringList fields = dynamic_cast<ID3v2::UserTextIdentificationFrame *>(frames.front())->fieldList();
            if (fields.size() < 2) return false;
            value = fields[1].to8Bit(true);
            return true;
        }
        if (xiph) {
            const Ogg::FieldListMap &map = xiph->fieldListMap();
            auto it = map.find(utf8(key.c_str()).upper());
            if (it == map.end() || it->second.isEmpty()) return false;
            value = it->second.front().to8Bit(true);
            return true;
        }
        if (mp4) {
            if (key == "BPM") {
                if (!mp4->contains("tmpo")) return false;
                value = std::to_string(mp4->item("tmpo").toInt());
                return true;
            }
            StringList names = freeformNames(mp4, utf8(key.c_str()));
            if (names.isEmpty()) return false;
            StringList list = mp4->item(names.front()).toStringList();
            if (list.isEmpty()) return false;
            value = list.front().to8Bit(true);
            return true;
        }
        if (ape) {
            const APE::ItemListMap &map = ape->itemListMap();
            auto it = map.find(utf8(key.c_str()).upper());
            if (it == map.end()) return false;
            value = it->second.toString().to8Bit(true);
            return true;
        }
        return false;
    }

    void write(const std::string &key, const char *value) {
        String k = utf8(key.c_str());
        if (xiph) {
            if (value) xiph->addField(k, utf8(value), true); else xiph->removeFields(k);
            return;
        }
        if (mp4) {
            if (key == "BPM") {
                if (value) mp4->setItem("tmpo", MP4::Item(std::atoi(value))); else mp4->removeItem("tmpo");
                return;
            }
            for (const auto &name : freeformNames(mp4, k)) mp4->removeItem(name);
            // Mixed In Key, Serato and Traktor name the key's atom in lower case.
            String name = key == "INITIALKEY" ? String("initialkey") : k;
            if (value) mp4->setItem(String(kFreeform) + name, MP4::Item(StringList(utf8(value))));
            return;
        }
        if (ape) {
            if (value) ape->addValue(k, utf8(value), true); else ape->removeItem(k);
        }
    }

    /// Saves the file; false with the reason in `why` when it must not or could not be saved.
    bool save(std::string &why) {
        if (auto *f = dynamic_cast<FLAC::File *>(ref.file())) {
            // A FLAC metadata block's length has 24 bits; TagLib lets a longer comment wrap and the
            // file stops decoding.
            if (xiph && xiph->render(false).size() > 0xFFFFFF) {
                why = "its Vorbis comment would pass FLAC's 16 MiB block limit (long lyrics or an embedded picture in the comment); not written";
                return false;
            }
        }
        if (!ref.file()->save()) {
            why = "TagLib could not save the tag";
            return false;
        }
        return true;
    }
};

}  // namespace

extern "C" int naviscan_tag_kind_of(const char *path) {
    try {
        Opened opened(path, false);
        return opened.kind;
    } catch (...) {
        return NAVISCAN_TAG_NONE;
    }
}

extern "C" int naviscan_tag_write(const char *path, const naviscan_tag_field *fields, int count, char *error, size_t error_size) {
    try {
        Opened opened(path, true);
        if (opened.kind == NAVISCAN_TAG_NONE) {
            fail(error, error_size, "TagLib cannot open this file as a tagged audio file");
            return -1;
        }
        if (opened.kind == NAVISCAN_TAG_ID3V2) {
            // MP3 tags are edited by naviscan's own ID3v2 editor (ID3v2Editor.swift), which keeps
            // the tag's version and every frame TagLib would drop.
            fail(error, error_size, "MP3 tags are not written through TagLib");
            return -1;
        }
        if (opened.ref.file()->readOnly()) {
            fail(error, error_size, "the file cannot be opened for writing");
            return -1;
        }
        if (!opened.id3 && !opened.xiph && !opened.mp4 && !opened.ape) {
            fail(error, error_size, "the file has no tag TagLib can create");
            return -1;
        }
        for (int i = 0; i < count; i++) opened.write(fields[i].key, fields[i].value);
        std::string why;
        if (!opened.save(why)) {
            fail(error, error_size, why);
            return -1;
        }
        return 0;
    } catch (const std::exception &e) {
        fail(error, error_size, std::string("TagLib failed: ") + e.what());
        return -1;
    } catch (...) {
        fail(error, error_size, "TagLib failed");
        return -1;
    }
}

extern "C" int naviscan_tag_read(const char *path, const char *const *keys, int count, const char **values,
                                 char *buffer, size_t buffer_size, char *error, size_t error_size) {
    try {
        Opened opened(path, false);
        if (opened.kind == NAVISCAN_TAG_NONE) {
            fail(error, error_size, "TagLib cannot open this file as a tagged audio file");
            return -1;
        }
        size_t used = 0;
        for (int i = 0; i < count; i++) {
            values[i] = nullptr;
            std::string value;
            if (!opened.read(keys[i], value)) continue;
            if (used + value.size() + 1 > buffer_size) {
                fail(error, error_size, "a tag value is longer than naviscan reads");
                return -1;
            }
            std::memcpy(buffer + used, value.c_str(), value.size() + 1);
            values[i] = buffer + used;
            used += value.size() + 1;
        }
        return 0;
    } catch (...) {
        fail(error, error_size, "TagLib failed to read the tags");
        return -1;
    }
}
